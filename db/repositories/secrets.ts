import { isSealed, open, seal } from '../../lib/secret-box.ts';
import type { Database } from '../database.ts';

/**
 * Returns the stored secret `name`, storing `candidate` first when there is none. Several nodes starting at
 * once all end up with the one value that won the insert. With a `key` the secret is stored sealed, so a copy
 * of the database alone (a backup) cannot sign tokens or file links; without one (a shared database without
 * `global.encrypt_key`) it is stored as it is.
 */
export async function getOrCreateSecret(
  db: Database,
  name: string,
  candidate: string,
  key: Buffer | undefined,
): Promise<string> {
  await db.upsert({
    table: db.t.secrets,
    rows: [{ name, value: key ? seal(key, candidate) : candidate, created_at: db.dialect.toDbTime(new Date()) }],
    key: ['name'],
  });
  const row = (await db.knex(db.t.secrets).where({ name }).first('value')) as { value: string } | undefined;
  if (!row) throw new Error(`secret ${name} could not be stored`);
  if (!isSealed(row.value)) return row.value;
  if (!key) throw new Error(`the stored secret ${name} is sealed: configure global.encrypt_key (every node needs it)`);
  const secret = open(key, row.value);
  if (secret === undefined)
    throw new Error(
      `the stored secret ${name} does not open with this encryption key (global.encrypt_key, or console.key beside a SQLite database)`,
    );
  return secret;
}

/**
 * Seals the secrets stored as they are, by an earlier version or while no key was configured; answers how many.
 * Each is replaced only while it still holds the plain value: a node sealing it meanwhile sealed the same secret.
 */
export async function sealStoredSecrets(db: Database, key: Buffer): Promise<number> {
  const rows = (await db.knex(db.t.secrets).select('name', 'value')) as { name: string; value: string }[];
  const plain = rows.filter((row) => !isSealed(row.value));
  for (const { name, value } of plain)
    await db
      .knex(db.t.secrets)
      .where({ name, value })
      .update({ value: seal(key, value) });
  return plain.length;
}
