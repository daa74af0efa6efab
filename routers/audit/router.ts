import { listOutput } from '../common/schemas.ts';
import { requirePermission, router } from '../common/trpc.ts';
import { auditSchema, listAuditInput } from './schemas.ts';

export const auditRouter = router({
  list: requirePermission('audit_log:list')
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
});
