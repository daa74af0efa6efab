// Child process of the HTTP benchmark: a console on the SQLite database at BENCH_DB, or on the database
// BENCH_DATABASE describes (seeded by seed-users.ts), reporting {port, token} as one JSON line on stdout.
import { dirname, join } from 'node:path';
import pino from 'pino';
import { createConsole } from '../../index.ts';

const path = process.env.BENCH_DB!;
const password = process.env.BENCH_PASSWORD!;
const c = await createConsole({
  env: {},
  logger: pino({ level: 'silent' }),
  announce: () => {},
  config: {
    server: { port: 0, host: '127.0.0.1', file_upload_path: join(dirname(path), 'uploads') },
    database: process.env.BENCH_DATABASE ? JSON.parse(process.env.BENCH_DATABASE) : { driver: 'sqlite', path },
    log: { path: '', level: 'error' },
    rate_limit: { enabled: false },
  },
});
const { port } = await c.listen();
const login = await fetch(`http://127.0.0.1:${port}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password }) });
const token = ((await login.json()) as { data: { token: string } }).data.token;
process.stdout.write(`${JSON.stringify({ port, token })}\n`);
// The benchmark asks for this process's CPU time over IPC.
process.on('message', () => process.send?.(process.cpuUsage()));
process.on('SIGTERM', () => void c.close().then(() => process.exit(0)));
