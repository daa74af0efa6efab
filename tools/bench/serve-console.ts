// Child process of the HTTP and events benchmarks: a console on the SQLite database at BENCH_DB, or on the database
// BENCH_DATABASE describes (seeded by seed-users.ts), with the config sections BENCH_CONFIG holds as JSON added,
// reporting {port, token} over IPC (report.ts). It runs as `npm start` serves: the default configuration, the log
// at `info` to stdout and to a file beside the database, and the rate limits on, raised above what the load asks
// so that their cost is measured and no request is refused.
import { request } from 'node:http';
import { dirname, join } from 'node:path';
import { createConsole } from '../../index.ts';

const path = process.env.BENCH_DB!;
const password = process.env.BENCH_PASSWORD!;
const c = await createConsole({
  env: {},
  announce: () => {},
  config: {
    server: { port: 0, host: '127.0.0.1', file_upload_path: join(dirname(path), 'uploads') },
    database: process.env.BENCH_DATABASE ? JSON.parse(process.env.BENCH_DATABASE) : { driver: 'sqlite', path },
    log: { path: join(dirname(path), 'logs') },
    rate_limit: { global_per_minute: 100_000_000 },
    ...(process.env.BENCH_CONFIG ? JSON.parse(process.env.BENCH_CONFIG) : {}),
  },
});
// node:http rather than fetch: fetch would load undici (~10 MB resident) into the server whose idle memory is measured.
function login(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/api/auth/login',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let body = '';
        res
          .setEncoding('utf8')
          .on('data', (chunk: string) => (body += chunk))
          .on('end', () => resolve((JSON.parse(body) as { data: { token: string } }).data.token));
      },
    );
    req.once('error', reject).end(JSON.stringify({ username: 'admin', password }));
  });
}

const { port } = await c.listen();
const token = await login(port);
process.send!({ port, token });
// The benchmark asks for this process's CPU time, or its memory after a full collection (with --expose-gc), over IPC.
process.on('message', (what) => {
  if (what !== 'memory') return process.send?.(process.cpuUsage());
  (globalThis as { gc?: () => void }).gc?.();
  process.send?.(process.memoryUsage());
});
process.on('SIGTERM', () => void c.close().then(() => process.exit(0)));
