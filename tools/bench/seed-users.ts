// Benchmark set-up, run as its own process so the server's memory is measured without it: migrates a fresh
// database (SQLite at BENCH_DB, or the `database` config section BENCH_DATABASE holds as JSON), creates the
// administrator (BENCH_PASSWORD) and inserts directly N users (one precomputed password hash), the
// administrator's finished tasks of mixed statuses and audit records, as the list rows of the benchmark read.
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { openDatabase } from '../../db/database.ts';
import { findUserByLogin } from '../../db/repositories/users.ts';
import { ensureAdminUser, ensureSystemRoles } from '../../routers/auth/bootstrap.ts';
import { PasswordHasher } from '../../routers/auth/password-hash.ts';
import { PermissionCatalogue } from '../../routers/permissions/service.ts';
import { databaseOptions } from '../../server/database-options.ts';
import { loadConfig } from '../../server/config/load.ts';

const path = process.env.BENCH_DB!;
const users = Number(process.env.BENCH_USERS ?? 10_000);
const tasks = Number(process.env.BENCH_TASKS ?? 2_000);
const auditRecords = Number(process.env.BENCH_AUDIT ?? 20_000);
const database = process.env.BENCH_DATABASE ? JSON.parse(process.env.BENCH_DATABASE) : { driver: 'sqlite', path };
const db = openDatabase(databaseOptions(loadConfig({ env: {}, config: { database } })), pino({ level: 'silent' }));
await db.migrate();
const hasher = new PasswordHasher(1024);
await ensureSystemRoles(db, new PermissionCatalogue());
await ensureAdminUser(db, hasher, {
  username: 'admin',
  email: 'admin@example.test',
  password: process.env.BENCH_PASSWORD!,
});
const admin = (await findUserByLogin(db, 'admin'))!;
const hash = await hasher.hash('unused-password');
const start = Date.now() - Math.max(users, auditRecords) * 1000;
const at = (i: number) => db.dialect.toDbTime(new Date(start + i * 1000));
const userRows = Array.from({ length: users }, (_, i) => {
  const name = `user${String(i).padStart(5, '0')}`;
  return {
    id: randomUUID(),
    username: name,
    email: `${name}@example.test`,
    username_key: name,
    email_key: `${name}@example.test`,
    password_hash: hash,
    status: 'active',
    created_at: at(i),
    updated_at: at(i),
  };
});
await db.knex.batchInsert(db.t.users, userRows, 500);

// Finished tasks only: the server's engine would otherwise claim pending ones while the lists are measured.
const outcomes: { status: string; result: string | null; error: string | null }[] = [
  { status: 'success', result: '{"rows":1000}', error: null },
  { status: 'success', result: '{"rows":250}', error: null },
  { status: 'failed', result: null, error: 'the export target refused the file' },
  { status: 'cancelled', result: null, error: null },
];
const taskRows = Array.from({ length: tasks }, (_, i) => {
  const outcome = outcomes[i % outcomes.length]!;
  return {
    id: randomUUID(),
    type: i % 3 ? 'user-export' : 'report',
    category: 'user',
    payload: JSON.stringify({ format: 'csv', search: `user${i % 100}` }),
    progress: 100,
    ...outcome,
    retry_count: 0,
    max_retries: 3,
    creator_id: admin.id,
    cancel_requested: false,
    run_after: at(i),
    created_at: at(i),
    updated_at: at(i + 5),
    started_at: at(i + 1),
    finished_at: at(i + 5),
  };
});
await db.knex.batchInsert(db.t.tasks, taskRows, 200);

const actions = ['create', 'update', 'delete', 'login'] as const;
const auditRows = Array.from({ length: auditRecords }, (_, i) => {
  const user = userRows[i % userRows.length]!;
  return {
    id: randomUUID(),
    created_at: at(i),
    user_id: admin.id,
    username: 'admin',
    action: actions[i % actions.length],
    resource_type: 'user',
    resource_id: user.id,
    status: i % 17 ? 'success' : 'failure',
    ip: '10.0.0.7',
    user_agent: 'Mozilla/5.0 (X11; Linux x86_64) bench',
    org_id: null,
    details: JSON.stringify({ username: user.username, after: { status: 'active' } }),
  };
});
await db.knex.batchInsert(db.t.auditLogs, auditRows, 500);
await db.close();
