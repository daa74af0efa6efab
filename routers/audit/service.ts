import type { Database } from '../../db/database.ts';
import { ForbiddenError } from '../../lib/errors.ts';
import { ReadCache } from '../../db/read-cache.ts';
import { listAuditRecords, type AuditFilter, type AuditRecord } from '../../db/repositories/audit-logs.ts';
import type { Caller, ListScope, RequestInfo } from '../common/context.ts';
import { offsetOf, page } from '../common/schemas.ts';
import { exportAuditText } from './export.ts';
import type { ExportAuditInput, ListAuditInput } from './schemas.ts';
import type { AuditWriter } from './writer.ts';

/** The list's and the export's filters as the repository takes them; acting in an organization, only its records. */
function filterOf(input: ExportAuditInput | ListAuditInput, orgId?: string): AuditFilter {
  return {
    user_id: input.user_id,
    action: input.action,
    resource_type: input.resource_type,
    start_time: input.start_time ? new Date(input.start_time) : undefined,
    end_time: input.end_time ? new Date(input.end_time) : undefined,
    org_id: orgId,
  };
}

/** Listing and exporting the audit log. */
export const LIST_PERMISSION = 'audit_log:list';

/**
 * Reading the audit log; records are written through `AuditWriter` (writer.ts). A page is read again whenever
 * the database has changed (db/read-cache.ts).
 */
export class AuditLogService {
  private readonly pages: ReadCache<ReturnType<typeof page<AuditRecord>>>;

  constructor(
    private readonly db: Database,
    cacheSize: number,
    private readonly audit: AuditWriter,
  ) {
    this.pages = new ReadCache(db, cacheSize);
  }

  /** A page of records, newest first; acting in an organization (`orgId`), only those made in it. */
  list(input: ListAuditInput, { orgId, noCache }: ListScope = {}) {
    return this.pages.get(JSON.stringify([orgId, input]), () => this.read(input, orgId), undefined, noCache);
  }

  /**
   * The records the list would show, in seq order with their chain fields, as text to stream; the export itself
   * is audited first (and so is in it when the filters take it).
   */
  async export(input: ExportAuditInput, caller: Caller, req: RequestInfo): Promise<AsyncGenerator<string>> {
    if (!caller.isAdmin && !caller.permissions.has(LIST_PERMISSION))
      throw new ForbiddenError('auth.missing_permission', { code: LIST_PERMISSION });
    await this.audit.write({
      action: 'export',
      resource_type: 'audit_log',
      actor: caller,
      req,
      details: { ...input },
    });
    return exportAuditText(this.db, filterOf(input, req.orgId), input.format);
  }

  private async read(input: ListAuditInput, orgId?: string) {
    const { rows, total } = await listAuditRecords(this.db, filterOf(input, orgId), offsetOf(input), input.page_size);
    return page(rows, total, input);
  }
}
