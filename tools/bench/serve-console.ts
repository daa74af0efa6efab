// Child process of the HTTP benchmark: a console on a fresh SQLite database seeded with N users, reporting
// {port, token} as one JSON line on stdout. Seeding inserts rows directly with one precomputed hash.
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createConsole } from '../../index.ts';
import { PasswordHasher } from '../../routers/auth/password-hash.ts';

const users = Number(process.env.BENCH_USERS ?? 10_000);
const password = 'bench-password-1';
const dir = mkdtempSync(join(tmpdir(), 'console-bench-'));

const c = await createConsole({
  env: {},
  logger: pino({ level: 'silent' }),
  announce: () => {},
  config: {
    server: { port: 0, host: '127.0.0.1', file_upload_path: join(dir, 'uploads') },
    database: { driver: 'sqlite', path: join(dir, 'console.db') },
    log: { path: '', level: 'error' },
    rate_limit: { enabled: false },
    bootstrap: { admin_password: password },
  },
});

const hash = await new PasswordHasher(1024).hash('unused-password');
const start = Date.now() - users * 1000;
const rows = Array.from({ length: users }, (_, i) => {
  const at = c.db.dialect.toDbTime(new Date(start + i * 1000));
  const name = `user${String(i).padStart(5, '0')}`;
  return { id: randomUUID(), username: name, email: `${name}@example.test`, username_key: name, email_key: `${name}@example.test`, password_hash: hash, status: 'active', created_at: at, updated_at: at };
});
await c.db.knex.batchInsert(c.db.t.users, rows, 500);

const { port } = await c.listen();
const login = await fetch(`http://127.0.0.1:${port}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password }) });
const token = ((await login.json()) as { data: { token: string } }).data.token;
process.stdout.write(`${JSON.stringify({ port, token })}\n`);
process.on('SIGTERM', () => void c.close().then(() => process.exit(0)));
