import type { Database } from '../../db/database.ts';
import { migrations } from '../../db/migrations/index.ts';
import type { ConsoleConfigInput } from '../../server/config/schema.ts';
import { openTestDatabase } from './harness.ts';

/**
 * Makes the database of `config` an installation from before `migration`: the migrations up to the one before it
 * run, then `seed` writes rows in that older schema. Upgrade tests then start the current code on it.
 */
export async function installBefore(
  config: ConsoleConfigInput,
  migration: string,
  seed: (db: Database) => Promise<void>,
): Promise<void> {
  const later = migrations.splice(migrations.findIndex((m) => m.name === migration));
  const db = openTestDatabase(config.database!);
  try {
    await db.migrate();
    await seed(db);
  } finally {
    migrations.push(...later);
    await db.close();
  }
}
