import type { Database } from '../database.ts';
import { isoFromDb } from '../dialects/index.ts';

/** A stored file (task artifacts); the bytes live under server.file_upload_path at `path`. */
export interface FileRow {
  key: string;
  task_id: string | null;
  owner_id: string | null;
  name: string;
  content_type: string;
  size: number;
  path: string;
  created_at: string;
}

const fromDb = (r: Record<string, unknown>): FileRow => ({
  ...(r as unknown as FileRow),
  size: Number(r.size),
  created_at: isoFromDb(r.created_at)!,
});

export async function insertFile(db: Database, f: FileRow): Promise<void> {
  await db.knex(db.t.files).insert({ ...f, created_at: db.dialect.toDbTime(new Date(f.created_at)) });
}

export async function findFile(db: Database, key: string): Promise<FileRow | undefined> {
  const row = (await db.knex(db.t.files).where('key', key).first()) as Record<string, unknown> | undefined;
  return row ? fromDb(row) : undefined;
}

/** Files older than `before`, or belonging to the given tasks. */
export async function findExpiredFiles(
  db: Database,
  before: Date,
  taskIds: string[],
  limit: number,
): Promise<FileRow[]> {
  const q = db.knex(db.t.files).where('created_at', '<', db.dialect.toDbTime(before) as string);
  if (taskIds.length) q.orWhereIn('task_id', taskIds);
  return ((await q.limit(limit)) as Record<string, unknown>[]).map(fromDb);
}

export async function deleteFileRows(db: Database, keys: string[]): Promise<number> {
  return keys.length ? db.knex(db.t.files).whereIn('key', keys).del() : 0;
}
