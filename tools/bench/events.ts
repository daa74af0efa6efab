// npm run bench:events — live task events on one node (SQLite): 1,000 open SSE streams of `GET /api/tasks/events`,
// each seeing every task (the administrator's streams), while user exports are started one after another through
// `POST /api/authorization/users/export`. Prints the server's memory per open stream, its CPU per event delivered,
// and create→event latency p50/p99 (first stream and last of all streams) beside `/api` p50/p99 of the create
// request and of `GET /api/tasks/:id`, all from the same run. Figures only: nothing is asserted.
// The server is its own process (tools/bench/serve-console.ts, run from the sources through tsx as bench:engine
// runs), so its memory and CPU are measured without the clients'. BENCH_STREAMS (1000) and BENCH_CREATES (100)
// change the counts.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { Agent, request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reported } from './report.ts';

const STREAMS = Number(process.env.BENCH_STREAMS ?? 1000);
const CREATES = Number(process.env.BENCH_CREATES ?? 100);
const EXPORTED_USERS = 100;

const env = {
  ...process.env,
  NODE_ENV: 'production',
  BENCH_PASSWORD: 'bench-password-1',
  BENCH_DB: join(mkdtempSync(join(tmpdir(), 'console-bench-events-')), 'console.db'),
  BENCH_USERS: String(EXPORTED_USERS),
  BENCH_TASKS: '0',
  BENCH_AUDIT: '0',
  // One user holds every stream, so every event goes to all of them; the per-user limit is raised to allow that.
  BENCH_CONFIG: JSON.stringify({ events: { max_streams_per_user: STREAMS + 1 } }),
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const ms = (values: number[], q: number) =>
  quantile(
    [...values].sort((a, b) => a - b),
    q,
  ).toFixed(1);

async function run(args: string[]): Promise<void> {
  await new Promise<void>((resolve, reject) =>
    spawn(process.execPath, args, { stdio: 'inherit', env }).once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${args.join(' ')} exited with ${code}`)),
    ),
  );
}

interface Server {
  proc: ChildProcess;
  port: number;
  token: string;
}

async function startServer(): Promise<Server> {
  const proc = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', 'tools/bench/serve-console.ts'], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    env,
  });
  const { port, token } = await reported(proc, 'the server');
  return { proc, port, token: token! };
}

/** Asks the server process over IPC: its CPU time (µs), or its memory after a full collection. */
function ask<T>(server: Server, what: 'cpu' | 'memory'): Promise<T> {
  return new Promise((resolve) => {
    server.proc.once('message', (m) => resolve(m as T));
    server.proc.send(what);
  });
}
const cpuMicros = async (server: Server) => {
  const { user, system } = await ask<NodeJS.CpuUsage>(server, 'cpu');
  return user + system;
};
const memoryMb = async (server: Server) => {
  const m = await ask<NodeJS.MemoryUsage>(server, 'memory');
  return { rss: m.rss / 2 ** 20, heap: m.heapUsed / 2 ** 20, external: (m.external + m.arrayBuffers) / 2 ** 20 };
};

// Each stream its own connection, as each browser tab would be.
const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
const apiAgent = new Agent({ keepAlive: true, maxSockets: 4 });

/** One `/api` call with the server's token: the envelope's `data` and the time it took (ms). */
function api(server: Server, method: string, path: string, body?: unknown): Promise<{ data: any; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        path,
        method,
        agent: apiAgent,
        headers: {
          authorization: `Bearer ${server.token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
      },
      (res) => {
        let text = '';
        res
          .setEncoding('utf8')
          .on('data', (chunk: string) => (text += chunk))
          .on('end', () => {
            const took = performance.now() - t0;
            if ((res.statusCode ?? 500) >= 300)
              return reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`));
            resolve({ data: (JSON.parse(text) as { data: unknown }).data, ms: took });
          });
      },
    );
    req.once('error', reject).end(body === undefined ? undefined : JSON.stringify(body));
  });
}

interface TaskEvent {
  id: string;
  task: { id: string; status: string; progress: number };
}

/** An open stream: the events it received, and the tasks it has heard of. */
interface Stream {
  events: number;
  tasks: Set<string>;
  res: IncomingMessage;
}

function openStream(server: Server): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        path: '/api/tasks/events',
        agent,
        headers: { authorization: `Bearer ${server.token}`, accept: 'text/event-stream' },
      },
      (res) => {
        if (res.statusCode !== 200 || !String(res.headers['content-type']).startsWith('text/event-stream')) {
          res.resume();
          return reject(new Error(`the stream answered ${res.statusCode} ${res.headers['content-type']}`));
        }
        const stream: Stream = { events: 0, tasks: new Set(), res };
        let buffer = '';
        res.setEncoding('utf8').on('data', (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = frame
              .split('\n')
              .filter((line) => line.startsWith('data:'))
              .map((line) => line.slice(5).trimStart())
              .join('\n');
            if (!data) continue; // a heartbeat comment or the retry hint
            stream.events++;
            onEvent(stream, JSON.parse(data) as TaskEvent);
          }
        });
        resolve(stream);
      },
    );
    req.once('error', reject).end();
  });
}

/** For each task: how many streams have heard of it, and when the first and the last did. */
const reach = new Map<string, { count: number; first: number; last: number }>();
let waiting: { taskId: string; streams: number; resolve: () => void } | undefined;
let finished = new Set<string>();

// A task's first event on a stream counts, whatever its status: a slow stream may get the latest state only.
function onEvent(stream: Stream, event: TaskEvent): void {
  const id = event.task.id;
  if (event.task.status === 'success' || event.task.status === 'failed') finished.add(id);
  if (stream.tasks.has(id)) return;
  stream.tasks.add(id);
  const now = performance.now();
  const entry = reach.get(id) ?? { count: 0, first: now, last: now };
  entry.count++;
  entry.last = now;
  reach.set(id, entry);
  if (waiting?.taskId === id && entry.count >= waiting.streams) waiting.resolve();
}

/** Resolves once `taskId` reached `streams` streams; fails after 30 s saying how far it got. */
function reached(taskId: string, streams: number): Promise<void> {
  if ((reach.get(taskId)?.count ?? 0) >= streams) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`task ${taskId} reached ${reach.get(taskId)?.count ?? 0} of ${streams} streams in 30 s`)),
      30_000,
    );
    waiting = {
      taskId,
      streams,
      resolve: () => {
        clearTimeout(timer);
        waiting = undefined;
        resolve();
      },
    };
  });
}

interface Phase {
  streams: number;
  createMs: number[];
  getMs: number[];
  firstMs: number[];
  lastMs: number[];
  cpu: number;
  events: number;
}

/** Starts `CREATES` exports one after another, each once the previous one's creation reached every stream. */
async function phase(server: Server, streams: Stream[]): Promise<Phase> {
  const result: Phase = {
    streams: streams.length,
    createMs: [],
    getMs: [],
    firstMs: [],
    lastMs: [],
    cpu: 0,
    events: 0,
  };
  const events0 = streams.reduce((n, s) => n + s.events, 0);
  const cpu0 = await cpuMicros(server);
  const ids: string[] = [];
  for (let i = 0; i < CREATES; i++) {
    const t0 = performance.now();
    const created = await api(server, 'POST', '/api/authorization/users/export', {});
    const id = (created.data as { id: string }).id;
    ids.push(id);
    result.createMs.push(created.ms);
    await reached(id, streams.length);
    const entry = reach.get(id)!;
    result.firstMs.push(entry.first - t0);
    result.lastMs.push(entry.last - t0);
    result.getMs.push((await api(server, 'GET', `/api/tasks/${id}`)).ms);
  }
  // Every export's own events (running, progress, success) are part of the work delivered.
  while (!ids.every((id) => finished.has(id))) await sleep(20);
  await sleep(200);
  result.cpu = (await cpuMicros(server)) - cpu0;
  result.events = streams.reduce((n, s) => n + s.events, 0) - events0;
  return result;
}

await run(['--import', 'tsx', 'tools/bench/seed-users.ts']);
const server = await startServer();
try {
  await sleep(1000);
  const probe = [await openStream(server)];
  process.stdout.write(`warm-up and baseline: ${CREATES} exports with 1 stream open...\n`);
  await phase(server, probe);
  finished = new Set();
  const small = await phase(server, probe);

  const before = await memoryMb(server);
  process.stdout.write(`opening ${STREAMS} streams...\n`);
  const many: Stream[] = [];
  for (let i = 0; i < STREAMS; i += 50) {
    const batch = Math.min(50, STREAMS - i);
    many.push(...(await Promise.all(Array.from({ length: batch }, () => openStream(server)))));
  }
  await sleep(1000);
  const open = await memoryMb(server);
  process.stdout.write(`${CREATES} exports with ${STREAMS + 1} streams open...\n`);
  const big = await phase(server, [...probe, ...many]);
  const after = await memoryMb(server);

  const perStreamKb = (a: number, b: number) => (((b - a) * 1024) / STREAMS).toFixed(1);
  const marginal = (big.cpu - small.cpu) / Math.max(1, big.events - small.events);
  console.log(`\nLive events benchmark (SQLite, one node): ${STREAMS} open SSE streams, ${CREATES} user exports of`);
  console.log(
    `${EXPORTED_USERS + 1} users each, started one after another (created, running, success, and progress when it is` +
      ` not coalesced away: ${(big.events / CREATES / big.streams).toFixed(2)} events per export on each stream)\n`,
  );
  console.log(
    `memory per open stream: ${perStreamKb(before.heap + before.external, open.heap + open.external)} KB, of which` +
      ` ${perStreamKb(before.heap, open.heap)} KB V8 heap and the rest external buffers (after a full collection;` +
      ` the sockets' native memory is in neither)`,
  );
  console.log(
    `server RSS: ${before.rss.toFixed(0)} MB with 1 stream, ${open.rss.toFixed(0)} MB with ${STREAMS + 1}, ` +
      `${after.rss.toFixed(0)} MB after the exports (not divided per stream: V8 returns and reserves heap pages as it likes)`,
  );
  console.log(
    `CPU per event delivered: ${(big.cpu / big.events).toFixed(1)} µs (${big.events} deliveries, ${(big.cpu / 1000).toFixed(0)} ms server CPU,` +
      ` the creates and the exports included); beyond 1 stream: ${marginal.toFixed(1)} µs per extra delivery`,
  );
  console.log('');
  console.log('latency (ms)'.padEnd(58), 'p50'.padStart(7), 'p99'.padStart(7));
  const row = (name: string, values: number[]) =>
    console.log(name.padEnd(58), ms(values, 0.5).padStart(7), ms(values, 0.99).padStart(7));
  row(`create→event, 1 stream open`, small.firstMs);
  row(`create→event, first of ${STREAMS + 1} streams`, big.firstMs);
  row(`create→event, last of ${STREAMS + 1} streams`, big.lastMs);
  row(`POST /api/authorization/users/export, ${STREAMS + 1} streams open`, big.createMs);
  row(`GET /api/tasks/:id, ${STREAMS + 1} streams open`, big.getMs);
  row(`POST /api/authorization/users/export, 1 stream open`, small.createMs);
  row(`GET /api/tasks/:id, 1 stream open`, small.getMs);
  for (const s of [...probe, ...many]) s.res.destroy();
} finally {
  server.proc.kill('SIGTERM');
  agent.destroy();
  apiAgent.destroy();
}
