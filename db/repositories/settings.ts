import type { Database } from '../database.ts';

export async function readAllSettings(db: Database): Promise<Map<string, string>> {
  const rows = (await db.knex(db.t.settings).select('key', 'value')) as { key: string; value: string }[];
  return new Map(rows.map((r) => [r.key, r.value]));
}

/** Writes every pair or none. */
export async function writeSettings(db: Database, values: Record<string, string>): Promise<void> {
  const now = db.dialect.toDbTime(new Date());
  await db.knex.transaction(async (trx) => {
    for (const [key, value] of Object.entries(values)) {
      await trx(db.t.settings).insert({ key, value, updated_at: now }).onConflict('key').merge(['value', 'updated_at']);
    }
  });
}
