// Prints the answer of `select 1 as one` on the database of PING_DATABASE (the harness's `database` keys), in a
// process of its own: for tests that need what Node reads only at start, such as NODE_EXTRA_CA_CERTS.
import pino from 'pino';
import { openDatabase } from '../../db/database.ts';
import { loadConfig } from '../../server/config/load.ts';
import { databaseOptions } from '../../server/database-options.ts';

const db = openDatabase(databaseOptions(loadConfig({ config: { database: JSON.parse(process.env.PING_DATABASE!) }, env: {} })), pino({ level: 'silent' }));
try {
  const [row] = (await db.knex.raw('select 1 as one')) as { one: number }[];
  process.stdout.write(`${row?.one}\n`);
} finally {
  await db.close();
}
