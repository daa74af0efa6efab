// npm run bench:http — side by side in one run: a bare Fastify route (the ceiling), GET /api/users?page_size=10
// with a valid token on a 10,000-user SQLite database, and the same procedure through /trpc.
// 50 connections, 10 s each (BENCH_SECONDS to change). Prints req/s, p50/p99, ratio to the ceiling and RSS.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);

interface Child {
  proc: ChildProcess;
  info: { port: number; token?: string };
}

// The servers run as `npm start` runs the service: the compiled build with the start script's node flags.
const startScript = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start;
const nodeFlags = startScript.split(' ').filter((word) => word.startsWith('--max-'));

const env = { ...process.env, NODE_ENV: 'production', BENCH_PASSWORD: 'bench-password-1', BENCH_DB: join(mkdtempSync(join(tmpdir(), 'console-bench-')), 'console.db') };

async function start(script: string): Promise<Child> {
  const proc = spawn(process.execPath, [...nodeFlags, script], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'], env });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: proc.stdout! }).once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return { proc, info: JSON.parse(line) as Child['info'] };
}

/** The child's CPU time in microseconds (user + system), asked over IPC. */
function cpuMicros(child: Child): Promise<number> {
  return new Promise((resolve) => {
    child.proc.once('message', (m) => resolve((m as { user: number; system: number }).user + (m as { system: number }).system));
    child.proc.send('cpu');
  });
}

const rssMb = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

interface Result {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  cpuPerRequest: number;
  idleRss: number;
  loadRss: number;
}

async function measure(name: string, child: Child, path: string, headers: Record<string, string> = {}): Promise<Result> {
  const pid = child.proc.pid!;
  await new Promise((r) => setTimeout(r, 1000));
  const idleRss = rssMb(pid);
  let loadRss = idleRss;
  const sampler = setInterval(() => (loadRss = Math.max(loadRss, rssMb(pid))), 250);
  // A short warm-up so JIT and caches are in the same state for every target.
  await autocannon({ url: `http://127.0.0.1:${child.info.port}${path}`, connections, duration: 2, headers });
  const cpu0 = await cpuMicros(child);
  const r = await autocannon({ url: `http://127.0.0.1:${child.info.port}${path}`, connections, duration: seconds, headers });
  const cpu = (await cpuMicros(child)) - cpu0;
  clearInterval(sampler);
  const cpuPerRequest = cpu / Math.max(1, r.requests.total);
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors, cpuPerRequest, idleRss, loadRss };
}

const bare = await start('dist/tools/bench/serve-bare.js');
const ceiling = await measure('bare fastify GET /bare', bare, '/bare');
bare.proc.kill('SIGTERM');

await new Promise<void>((resolve, reject) =>
  spawn(process.execPath, ['dist/tools/bench/seed-users.js'], { stdio: 'inherit', env }).once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`seeding failed: ${code}`)))),
);
const consoleChild = await start('dist/tools/bench/serve-console.js');
const auth = { authorization: `Bearer ${consoleChild.info.token}` };
const rest = await measure('GET /api/users?page_size=10', consoleChild, '/api/users?page_size=10', auth);
const trpc = await measure('GET /trpc/users.list', consoleChild, `/trpc/users.list?input=${encodeURIComponent(JSON.stringify({ page_size: 10 }))}`, auth);
consoleChild.proc.kill('SIGTERM');

const rows = [ceiling, rest, trpc];
console.log(`\nHTTP benchmark: ${connections} connections, ${seconds} s each, 10,000 users on SQLite\n`);
console.log('target'.padEnd(32), 'req/s'.padStart(9), 'p50 ms'.padStart(7), 'p99 ms'.padStart(7), 'of ceiling'.padStart(11), 'CPU µs/req'.padStart(11), 'idle RSS'.padStart(9), 'load RSS'.padStart(9), ' errors');
for (const r of rows) {
  console.log(
    r.name.padEnd(32),
    r.rps.toFixed(0).padStart(9),
    String(r.p50).padStart(7),
    String(r.p99).padStart(7),
    `${((r.rps / ceiling.rps) * 100).toFixed(1)}%`.padStart(11),
    r.cpuPerRequest.toFixed(1).padStart(11),
    `${r.idleRss.toFixed(0)} MB`.padStart(9),
    `${r.loadRss.toFixed(0)} MB`.padStart(9),
    ` ${r.non2xx + r.errors}`,
  );
}
console.log(`\nServer CPU per request relative to the ceiling (steadier than req/s on a shared machine): /api ${((ceiling.cpuPerRequest / rest.cpuPerRequest) * 100).toFixed(1)}%, /trpc ${((ceiling.cpuPerRequest / trpc.cpuPerRequest) * 100).toFixed(1)}%`);
console.log('Targets: /api/users ≥ 30% of the ceiling, p99 ≤ 25 ms, idle RSS ≤ 120 MB.');
const failed = rest.non2xx + rest.errors + trpc.non2xx + trpc.errors;
if (failed) {
  console.error(`${failed} requests failed`);
  process.exitCode = 1;
}
