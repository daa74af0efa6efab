import type { Database } from '../../db/database.ts';
import { ReadCache } from '../../db/read-cache.ts';
import { listAuditRecords, type AuditRecord } from '../../db/repositories/audit-logs.ts';
import type { ListScope } from '../common/context.ts';
import { offsetOf, page } from '../common/schemas.ts';
import type { ListAuditInput } from './schemas.ts';

/**
 * Reading the audit log; records are written through `AuditWriter` (writer.ts). A page is read again whenever
 * the database has changed (db/read-cache.ts).
 */
export class AuditLogService {
  private readonly pages: ReadCache<ReturnType<typeof page<AuditRecord>>>;

  constructor(
    private readonly db: Database,
    cacheSize: number,
  ) {
    this.pages = new ReadCache(db, cacheSize);
  }

  /** A page of records, newest first; acting in an organization (`orgId`), only those made in it. */
  list(input: ListAuditInput, { orgId, noCache }: ListScope = {}) {
    return this.pages.get(JSON.stringify([orgId, input]), () => this.read(input, orgId), undefined, noCache);
  }

  private async read(input: ListAuditInput, orgId?: string) {
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
