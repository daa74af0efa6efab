import type { Database } from '../database.ts';

export async function readAllSettings(db: Database): Promise<Map<string, string>> {
  const rows = (await db.knex(db.t.settings).select('key', 'value')) as { key: string; value: string }[];
  return new Map(rows.map((r) => [r.key, r.value]));
}

/** Writes every pair or none: one statement. */
export async function writeSettings(db: Database, values: Record<string, string>): Promise<void> {
  const now = db.dialect.toDbTime(new Date());
  const rows = Object.entries(values).map(([key, value]) => ({ key, value, updated_at: now }));
  if (rows.length) await db.dialect.replaceRows(db.knex, db.t.settings, rows, ['key']);
}
