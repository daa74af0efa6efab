import type { Database } from '../../db/database.ts';
import { listAuditRecords } from '../../db/repositories/audit-logs.ts';
import { offsetOf, page } from '../common/schemas.ts';
import type { ListAuditInput } from './schemas.ts';

/** Reading the audit log; records are written through `AuditWriter` (writer.ts). */
export class AuditLogService {
  constructor(private readonly db: Database) {}

  /** A page of records, newest first; acting in an organization (`orgId`), only those made in it. */
  async list(input: ListAuditInput, orgId?: string) {
    const { rows, total } = await listAuditRecords(
      this.db,
      {
        user_id: input.user_id,
        action: input.action,
        resource_type: input.resource_type,
        start_time: input.start_time ? new Date(input.start_time) : undefined,
        end_time: input.end_time ? new Date(input.end_time) : undefined,
        org_id: orgId,
      },
      offsetOf(input),
      input.page_size,
    );
    return page(rows, total, input);
  }
}
