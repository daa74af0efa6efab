import { z } from 'zod';
import { paginationInput, timestamp, uuidString } from '../common/schemas.ts';

export const auditSchema = z
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

export const listAuditInput = paginationInput.extend({
  user_id: z.uuid().optional(),
  action: z.string().max(32).optional(),
  resource_type: z.string().max(32).optional(),
  start_time: isoTime.optional(),
  end_time: isoTime.optional(),
});

export type ListAuditInput = z.infer<typeof listAuditInput>;
