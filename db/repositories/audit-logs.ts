import type { Database } from '../database.ts';
import { countOf } from '../counts.ts';
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

export async function listAuditRecords(
  db: Database,
  f: AuditFilter,
  offset: number,
  limit: number,
): Promise<{ rows: AuditRecord[]; total: number }> {
  const q = db.knex(db.t.auditLogs);
  if (f.user_id) q.where('user_id', f.user_id);
  if (f.action) q.where('action', f.action);
  if (f.resource_type) q.where('resource_type', f.resource_type);
  if (f.org_id) q.where('org_id', f.org_id);
  if (f.start_time) q.where('created_at', '>=', db.dialect.toDbTime(f.start_time) as string);
  if (f.end_time) q.where('created_at', '<=', db.dialect.toDbTime(f.end_time) as string);
  const total = await countOf(db, q);
  const rows = await db.read(
    pageWindow(
      q.orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ]),
      offset,
      limit,
    ),
  );
  return {
    total,
    rows: rows.map((row) => ({
      ...(row as unknown as AuditRecord),
      created_at: isoFromDb(row.created_at)!,
      details: JSON.parse(String(row.details)) as Record<string, unknown>,
    })),
  };
}

export async function deleteAuditRecordsBefore(db: Database, before: Date): Promise<number> {
  return db
    .knex(db.t.auditLogs)
    .where('created_at', '<', db.dialect.toDbTime(before) as string)
    .del();
}
