import { AUDIT_VERIFY_PERMISSION } from './chain.ts';
import { LIST_PERMISSION } from './service.ts';
import { listOutput, noInput, paginationInput } from '../common/schemas.ts';
import { authedProcedure, requirePermission, router } from '../common/trpc.ts';
import { auditSchema, checkpointSchema, listAuditInput, publicKeySchema, verificationSchema } from './schemas.ts';

export const auditRouter = router({
  list: requirePermission(LIST_PERMISSION)
    .meta({
      list: true,
      openapi: {
        method: 'GET',
        path: '/audit-logs',
        tags: ['Audit logs'],
        summary: 'Audit records, newest first; with X-Scope-OrgID only those made in that organization',
        description:
          'A page of audit records, newest first, filtered by `user_id`, `action`, `resource_type` and the `start_time`–`end_time` range (ISO 8601). Each names the actor, the resource, the client address and, for changes, the record before and after.',
      },
    })
    .input(listAuditInput)
    .output(listOutput(auditSchema))
    .query(({ ctx, input }) => ctx.services.auditLogs.list(input, ctx.req)),
  verify: requirePermission(AUDIT_VERIFY_PERMISSION)
    .meta({
      openapi: {
        method: 'GET',
        path: '/audit-logs/verify',
        tags: ['Audit logs'],
        summary: 'Verifies the audit hash chain: intact up to seq N matching checkpoint K, or its first break',
        description:
          'Walks every record in seq order, checking each hash and link and every signed checkpoint (docs/audit-chain.md). A break names the first broken seq and its kind: `edited`, `removed`, `inserted`, `reordered`, or `checkpoint` (a signature that does not check).',
      },
    })
    .input(noInput)
    .output(verificationSchema)
    .query(({ ctx }) => ctx.services.auditChain.verify()),
  checkpoints: requirePermission(AUDIT_VERIFY_PERMISSION)
    .meta({
      list: true,
      openapi: {
        method: 'GET',
        path: '/audit-logs/checkpoints',
        tags: ['Audit logs'],
        summary: 'Signed checkpoints of the audit chain, newest first',
        description:
          'Each says how many records the chain held, the hash of the last, and which seqs the retention cleanup had removed, signed with Ed25519 (`GET /audit-logs/public-key`).',
      },
    })
    .input(paginationInput)
    .output(listOutput(checkpointSchema))
    .query(({ ctx, input }) => ctx.services.auditChain.checkpoints(input)),
  publicKey: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/audit-logs/public-key',
        tags: ['Audit logs'],
        summary: 'The Ed25519 public key audit checkpoints are signed with (PEM)',
        description:
          'Checks the signature of every checkpoint (`GET /audit-logs/checkpoints`, or the lines of `audit.checkpoint_path`) outside the service: Ed25519 over the note docs/audit-chain.md describes.',
      },
    })
    .input(noInput)
    .output(publicKeySchema)
    .query(({ ctx }) => ctx.services.auditChain.publicKey()),
});
