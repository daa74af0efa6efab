import type { Knex } from 'knex';
import type { ChainedContent } from '../../lib/audit-hash.ts';
import type { Database } from '../database.ts';
import { counted } from '../counts.ts';
import { ShapedRead } from '../fixed-read.ts';
import { isoFromDb } from '../dialects/index.ts';
import { pageWindow } from '../page-window.ts';

/** A record as the API answers it: the chain's content (lib/audit-hash.ts) without its seq. */
export interface AuditRecord extends Omit<ChainedContent, 'seq' | 'status' | 'details'> {
  status: 'success' | 'failure';
  details: Record<string, unknown>;
}

export interface AuditFilter {
  user_id?: string;
  action?: string;
  resource_type?: string;
  start_time?: Date;
  end_time?: Date;
  org_id?: string;
}

/** A filter as the statement binds it: times as the database takes them, an empty value as none. */
type AuditValues = Record<keyof AuditFilter, unknown>;

export function filterValues(db: Database, f: AuditFilter): AuditValues {
  return {
    user_id: f.user_id || undefined,
    action: f.action || undefined,
    resource_type: f.resource_type || undefined,
    org_id: f.org_id || undefined,
    start_time: f.start_time && db.dialect.toDbTime(f.start_time),
    end_time: f.end_time && db.dialect.toDbTime(f.end_time),
  };
}

/** A stored row as the API answers it, converted in place: each row object was made for this answer alone. */
export function recordFromRow<T extends AuditRecord = AuditRecord>(row: Record<string, unknown>): T {
  row.created_at = isoFromDb(row.created_at);
  row.details = JSON.parse(String(row.details));
  return row as unknown as T;
}

export function filtered(db: Database, f: AuditValues): Knex.QueryBuilder {
  const q = db.knex(db.t.auditLogs);
  if (f.user_id) q.where('user_id', f.user_id);
  if (f.action) q.where('action', f.action);
  if (f.resource_type) q.where('resource_type', f.resource_type);
  if (f.org_id) q.where('org_id', f.org_id);
  if (f.start_time) q.where('created_at', '>=', f.start_time as string);
  if (f.end_time) q.where('created_at', '<=', f.end_time as string);
  return q;
}

type Window = { offset: number; limit: number };

/** The audit list's statements on one database, compiled once per shape. */
const reads = new WeakMap<Database, { page: ShapedRead<AuditValues & Window>; count: ShapedRead<AuditValues> }>();

function readsOf(db: Database) {
  let r = reads.get(db);
  if (!r) {
    r = {
      page: new ShapedRead(
        (v) =>
          pageWindow(
            filtered(db, v).orderBy([
              { column: 'created_at', order: 'desc' },
              { column: 'id', order: 'desc' },
            ]),
            v.offset,
            v.limit,
          ),
        ['offset', 'limit'],
      ),
      count: new ShapedRead((v) => filtered(db, v).count({ n: '*' })),
    };
    reads.set(db, r);
  }
  return r;
}

export async function listAuditRecords(
  db: Database,
  f: AuditFilter,
  offset: number,
  limit: number,
): Promise<{ rows: AuditRecord[]; total: number }> {
  const values = filterValues(db, f);
  const r = readsOf(db);
  const total = await counted(db, r.count.of(values));
  const rows = await db.read(r.page.of({ ...values, offset, limit }));
  return { total, rows: rows.map((row) => recordFromRow(row)) };
}
