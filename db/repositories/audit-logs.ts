import type { Knex } from 'knex';
import type { Database } from '../database.ts';
import { counted } from '../counts.ts';
import { ShapedRead } from '../fixed-read.ts';
import { isoFromDb } from '../dialects/index.ts';
import { pageWindow } from '../page-window.ts';

export interface AuditRecord {
  id: string;
  created_at: string;
  user_id: string | null;
  username: string;
  action: string;
  resource_type: string;
  resource_id: string;
  status: 'success' | 'failure';
  ip: string;
  user_agent: string;
  org_id: string | null;
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

export async function insertAuditRecord(db: Database, r: AuditRecord): Promise<void> {
  await db
    .knex(db.t.auditLogs)
    .insert({ ...r, created_at: db.dialect.toDbTime(new Date(r.created_at)), details: JSON.stringify(r.details) });
}

/** A filter as the statement binds it: times as the database takes them, an empty value as none. */
type AuditValues = Record<keyof AuditFilter, unknown>;

function filtered(db: Database, f: AuditValues): Knex.QueryBuilder {
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
  const values: AuditValues = {
    user_id: f.user_id || undefined,
    action: f.action || undefined,
    resource_type: f.resource_type || undefined,
    org_id: f.org_id || undefined,
    start_time: f.start_time && db.dialect.toDbTime(f.start_time),
    end_time: f.end_time && db.dialect.toDbTime(f.end_time),
  };
  const r = readsOf(db);
  const total = await counted(db, r.count.of(values));
  const rows = await db.read(r.page.of({ ...values, offset, limit }));
  return {
    total,
    // Converted in place, as the task list does: each row object was made for this answer alone.
    rows: rows.map((row) => {
      row.created_at = isoFromDb(row.created_at);
      row.details = JSON.parse(String(row.details));
      return row as unknown as AuditRecord;
    }),
  };
}

export async function deleteAuditRecordsBefore(db: Database, before: Date): Promise<number> {
  return db
    .knex(db.t.auditLogs)
    .where('created_at', '<', db.dialect.toDbTime(before) as string)
    .del();
}
