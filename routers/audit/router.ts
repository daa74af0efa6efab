import { z } from 'zod';
import { listAuditRecords } from '../../db/repositories/audit-logs.ts';
import { listOutput, offsetOf, page, paginationInput, timestamp, uuidString } from '../common/schemas.ts';
import { requirePermission, router } from '../common/trpc.ts';

const auditSchema = z
  .object({
    id: uuidString,
    created_at: timestamp,
    user_id: uuidString.nullable(),
    username: z.string(),
    action: z.string(),
    resource_type: z.string(),
    resource_id: z.string(),
    status: z.enum(['success', 'failure']),
    ip: z.string(),
    user_agent: z.string(),
    org_id: uuidString.nullable(),
    details: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'AuditLog' });

const isoTime = z.iso.datetime({ offset: true });

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
    .input(
      paginationInput.extend({
        user_id: z.uuid().optional(),
        action: z.string().max(32).optional(),
        resource_type: z.string().max(32).optional(),
        start_time: isoTime.optional(),
        end_time: isoTime.optional(),
      }),
    )
    .output(listOutput(auditSchema))
    .query(async ({ ctx, input }) => {
      const { rows, total } = await listAuditRecords(
        ctx.services.db,
        {
          user_id: input.user_id,
          action: input.action,
          resource_type: input.resource_type,
          start_time: input.start_time ? new Date(input.start_time) : undefined,
          end_time: input.end_time ? new Date(input.end_time) : undefined,
          org_id: ctx.req.orgId,
        },
        offsetOf(input),
        input.page_size,
      );
      return page(rows, total, input);
    }),
});
