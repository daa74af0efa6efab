// Benchmark set-up, run as its own process: adds a backlog to the database seed-users.ts made (SQLite at
// BENCH_DB, or BENCH_DATABASE): 100,000 finished tasks and 10,000 pending ones of the administrator, created
// five seconds apart over the last six days, every eleventh one pending. The pending ones are of a type no
// runner takes, so the server under test leaves them pending. Multi-row inserts of 500 rows.
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { openDatabase } from '../../db/database.ts';
import { findUserByLogin } from '../../db/repositories/users.ts';
import { databaseOptions } from '../../server/database-options.ts';
import { loadConfig } from '../../server/config/load.ts';

const total = Number(process.env.BENCH_BACKLOG ?? 110_000);
const database = process.env.BENCH_DATABASE
  ? JSON.parse(process.env.BENCH_DATABASE)
  : { driver: 'sqlite', path: process.env.BENCH_DB! };
const db = openDatabase(databaseOptions(loadConfig({ env: {}, config: { database } })), pino({ level: 'silent' }));
const admin = (await findUserByLogin(db, 'admin'))!;
const now = Date.now();
const at = (ms: number) => db.dialect.toDbTime(new Date(ms));
for (let first = 0; first < total; first += 500) {
  const rows = [];
  for (let i = first; i < Math.min(total, first + 500); i++) {
    const created = now - (total - i) * 5_000;
    const pending = i % 11 === 10;
    rows.push({
      id: randomUUID(),
      type: pending ? 'bench-backlog' : 'report',
      status: pending ? 'pending' : 'success',
      category: 'user',
      payload: '{"format":"csv"}',
      progress: pending ? 0 : 100,
      result: pending ? null : '{"rows":1000}',
      retry_count: 0,
      max_retries: 3,
      creator_id: admin.id,
      cancel_requested: false,
      run_after: at(created),
      created_at: at(created),
      updated_at: at(pending ? created : created + 4_000),
      started_at: pending ? null : at(created + 1_000),
      finished_at: pending ? null : at(created + 4_000),
    });
  }
  await db.knex(db.t.tasks).insert(rows);
}
await db.dialect.refreshStatistics(db.knex, db.t.tasks);
await db.close();
