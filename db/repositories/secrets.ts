import type { Database } from '../database.ts';

/**
 * Returns the stored secret `name`, storing `candidate` first when there is none. Several nodes starting at
 * once all end up with the one value that won the insert.
 */
export async function getOrCreateSecret(db: Database, name: string, candidate: string): Promise<string> {
  await db.upsert({
    table: db.t.secrets,
    rows: [{ name, value: candidate, created_at: db.dialect.toDbTime(new Date()) }],
    key: ['name'],
  });
  const row = (await db.knex(db.t.secrets).where({ name }).first('value')) as { value: string } | undefined;
  if (!row) throw new Error(`secret ${name} could not be stored`);
  return row.value;
}
