// Prints the answer of `select 1 as one` on the database of PING_DATABASE (the harness's `database` keys), in a
// process of its own: for tests that need what Node reads only at start, such as NODE_EXTRA_CA_CERTS.
import { openTestDatabase } from './harness.ts';

const db = openTestDatabase(JSON.parse(process.env.PING_DATABASE!));
try {
  const [row] = (await db.knex.raw('select 1 as one')) as { one: number }[];
  process.stdout.write(`${row?.one}\n`);
} finally {
  await db.close();
}
