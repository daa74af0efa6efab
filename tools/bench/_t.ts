import pino from 'pino';
import { openDatabase } from '../../db/database.ts';
import { listAuditRecords } from '../../db/repositories/audit-logs.ts';
import { listTasks } from '../../db/repositories/tasks.ts';
import { listUsers } from '../../db/repositories/users.ts';
import { databaseOptions } from '../../server/database-options.ts';
import { loadConfig } from '../../server/config/load.ts';
const db = openDatabase(databaseOptions(loadConfig({ env: {}, config: { database: { driver: 'sqlite', path: process.argv[2] } } })), pino({ level: 'silent' }));
async function time(label: string, fn: () => Promise<unknown>, n = 500) {
  for (let i = 0; i < 50; i++) await fn();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn();
  console.log(label.padEnd(30), (Number(process.hrtime.bigint() - t0) / n / 1000).toFixed(1), 'µs');
}
await time('knex select 1', () => db.knex.raw('select 1'));
await time('audit list', () => listAuditRecords(db, {}, 0, 10));
await time('tasks list', () => listTasks(db, {}, 0, 10));
await time('users list', () => listUsers(db, { offset: 0, limit: 10 }));
let i = 0;
await time('users search', () => listUsers(db, { offset: 0, limit: 10, search: `er${String((i++ % 5000) * 2).padStart(5, '0')}` }), 50);
await db.close();
