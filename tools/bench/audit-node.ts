// One Console node for bench:audit, in a process of its own (nodes on separate machines share no lock but the
// database's). Configured by the environment (DATABASE_*, ...); `--chain off` stores audit records without the
// chain, the baseline the chain's cost is measured against. Prints {"port": n} once listening.
import { createConsole } from '../../index.ts';
import type { AppendAudit } from '../../routers/audit/writer.ts';

/** The audit insert as it was before the chain: one row, no head to lock. */
const unchained: AppendAudit = (db, r) =>
  db
    .knex(db.t.auditLogs)
    .insert({ ...r, created_at: db.dialect.toDbTime(new Date(r.created_at)), details: JSON.stringify(r.details) });

const chainOff = process.argv.includes('--chain') && process.argv[process.argv.indexOf('--chain') + 1] === 'off';
const c = await createConsole({
  env: process.env,
  configFile: undefined,
  announce: () => {},
  ...(chainOff && { auditAppend: unchained }),
});
const { port } = await c.listen();
process.stdout.write(`${JSON.stringify({ port })}\n`);
process.on('SIGTERM', () => void c.close().then(() => process.exit(0)));
