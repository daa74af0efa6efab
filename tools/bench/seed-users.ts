// Benchmark set-up, run as its own process so the server's memory is measured without it: migrates a fresh
// database (SQLite at BENCH_DB, or the `database` config section BENCH_DATABASE holds as JSON), creates the
// administrator (BENCH_PASSWORD) and inserts N users directly, with one precomputed password hash.
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { openDatabase } from '../../db/database.ts';
import { ensureAdminUser, ensureSystemRoles } from '../../routers/auth/bootstrap.ts';
import { PasswordHasher } from '../../routers/auth/password-hash.ts';
import { PermissionCatalogue } from '../../routers/permissions/catalogue.ts';
import { databaseOptions } from '../../server/database-options.ts';
import { loadConfig } from '../../server/config/load.ts';

const path = process.env.BENCH_DB!;
const users = Number(process.env.BENCH_USERS ?? 10_000);
const database = process.env.BENCH_DATABASE ? JSON.parse(process.env.BENCH_DATABASE) : { driver: 'sqlite', path };
const db = openDatabase(databaseOptions(loadConfig({ env: {}, config: { database } })), pino({ level: 'silent' }));
await db.migrate();
const hasher = new PasswordHasher(1024);
await ensureSystemRoles(db, new PermissionCatalogue());
await ensureAdminUser(db, hasher, { username: 'admin', email: 'admin@example.test', password: process.env.BENCH_PASSWORD! });
const hash = await hasher.hash('unused-password');
const start = Date.now() - users * 1000;
const rows = Array.from({ length: users }, (_, i) => {
  const at = db.dialect.toDbTime(new Date(start + i * 1000));
  const name = `user${String(i).padStart(5, '0')}`;
  return { id: randomUUID(), username: name, email: `${name}@example.test`, username_key: name, email_key: `${name}@example.test`, password_hash: hash, status: 'active', created_at: at, updated_at: at };
});
await db.knex.batchInsert(db.t.users, rows, 500);
await db.close();
