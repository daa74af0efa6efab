// npm run bench:http — side by side in one run: a bare Fastify route (the ceiling), then with a valid token on a
// SQLite database of 10,000 users, 2,000 tasks and 20,000 audit records: GET /api/users?page_size=10 (a cached
// page) and the same procedure through /trpc, GET /api/auth/me and /trpc/auth.me (every page load of a frontend
// asks for it), a user search rotating over 5,000 terms (which defeats the page cache), GET /api/tasks and
// GET /api/audit-logs as kept while the database is unchanged and with `Cache-Control: no-cache` (read every
// time); GET /api/tasks?page_size=10 and GET /api/user-tasks, read every time, with no task, with 20, and on a
// backlog of 110,000 more (seed-task-backlog.ts), three servers measured in turns (fresh ones each turn); then the
// first rows again on ClickHouse (chdb behind the tests' HTTP shim) when chdb is installed under .chdb/.
// 50 connections, 10 s each (BENCH_SECONDS to change; BENCH_ONLY to pick sections). Prints req/s, p50/p99, ratio
// to the ceiling and RSS. The servers run as `npm start` runs (the build, its node flags, the log at `info` to a
// file, the rate limits on: serve-console.ts). Then, pinned (section `pinned`): the server on core 0, this process
// with the load on core 1, the ceiling and the four rows a frontend asks most (users' first page and auth.me, REST
// and tRPC), so the server's share of the machine does not depend on how the load generator's share moves.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { CHDB_PREFIX, chdbInstalled } from '../../test/support/clickhouse-shim.ts';
import { benchOnly } from './only.ts';
import { reported, type Report } from './report.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
/** BENCH_ONLY measures some sections only, after the ceiling. */
const wanted = benchOnly(['sqlite', 'backlog', 'clickhouse', 'pinned']);

interface Child {
  proc: ChildProcess;
  info: Report;
}

// The servers run as `npm start` runs the service: the compiled build with the start script's node flags.
const startScript = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start;
const nodeFlags = startScript.split(' ').filter((word) => word.startsWith('--max-'));

const env = {
  ...process.env,
  NODE_ENV: 'production',
  BENCH_PASSWORD: 'bench-password-1',
  BENCH_DB: join(mkdtempSync(join(tmpdir(), 'console-bench-')), 'console.db'),
};

/** The CPU the pinned section gives the servers; this process (the load) gets the other. */
const SERVER_CPU = '0';
const LOAD_CPU = '1';

async function start(script: string, childEnv = env, pinned = false): Promise<Child> {
  const command = [process.execPath, ...nodeFlags, script];
  // taskset execs node in its place: the pid is the server's, and every thread it starts keeps the pinning.
  const [file, ...args] = pinned ? ['taskset', '-c', SERVER_CPU, ...command] : command;
  const proc = spawn(file!, args, {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    env: childEnv,
  });
  return { proc, info: await reported(proc, script) };
}

/** The child's CPU time in microseconds (user + system), asked over IPC. */
function cpuMicros(child: Child): Promise<number> {
  return new Promise((resolve) => {
    child.proc.once('message', (m) =>
      resolve((m as { user: number; system: number }).user + (m as { system: number }).system),
    );
    child.proc.send('cpu');
  });
}

const rssMb = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

interface Result {
  name: string;
  /** Requests answered and the seconds they took: what rows of several turns add up. */
  requests: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  cpuPerRequest: number;
  idleRss: number;
  loadRss: number;
}

/** Search terms that each match one seeded user, asked in turn, one per request. */
const SEARCH_TERMS = Array.from({ length: 5_000 }, (_, i) => `er${String(i * 2).padStart(5, '0')}`);

/** Asks for a list read from the database, not a page kept while the database is unchanged. */
const NO_CACHE = { 'cache-control': 'no-cache' };

/** What a row requests: one path, or a path made anew for every request. */
type Target = string | (() => string);

async function measure(
  name: string,
  child: Child,
  target: Target,
  headers: Record<string, string> = {},
  duration = seconds,
): Promise<Result> {
  const pid = child.proc.pid!;
  await new Promise((r) => setTimeout(r, 1000));
  const idleRss = rssMb(pid);
  let loadRss = idleRss;
  const sampler = setInterval(() => (loadRss = Math.max(loadRss, rssMb(pid))), 250);
  const base = `http://127.0.0.1:${child.info.port}`;
  const options =
    typeof target === 'string'
      ? { url: `${base}${target}`, headers }
      : {
          url: `${base}${target()}`,
          headers,
          requests: [{ setupRequest: (req: object) => ({ ...req, path: target() }) }],
        };
  // A short warm-up so JIT and caches are in the same state for every target.
  await autocannon({ ...options, connections, duration: 2 });
  const cpu0 = await cpuMicros(child);
  const r = await autocannon({ ...options, connections, duration });
  const cpu = (await cpuMicros(child)) - cpu0;
  clearInterval(sampler);
  const cpuPerRequest = cpu / Math.max(1, r.requests.total);
  return {
    name,
    requests: r.requests.total,
    // autocannon stops at its next one-second sample, so a run may last longer than it was asked to: the rate is
    // the answered requests over the seconds it lasted, as for several turns together (`combined`).
    seconds: r.duration,
    rps: r.requests.total / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
    cpuPerRequest,
    idleRss,
    loadRss,
  };
}

/** Stops a server and waits until it has exited (at once if it already had). */
function stop(child: Child): Promise<unknown> {
  if (child.proc.exitCode !== null || child.proc.signalCode !== null) return Promise.resolve();
  const exited = new Promise((resolve) => child.proc.once('exit', resolve));
  child.proc.kill('SIGTERM');
  return exited;
}

const bare = await start('dist/tools/bench/serve-bare.js');
const ceiling = await measure('bare fastify GET /bare', bare, '/bare');
await stop(bare);

/** Runs a seeding script of tools/bench on the database `childEnv` describes. */
function seed(script: string, childEnv: NodeJS.ProcessEnv): Promise<void> {
  return new Promise<void>((resolve, reject) =>
    spawn(process.execPath, [`dist/tools/bench/${script}`], { stdio: 'inherit', env: childEnv }).once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${script} failed: ${code}`)),
    ),
  );
}

/** The rows a frontend asks most: the first page of users and the caller, by REST and by tRPC. */
const FRONT_TARGETS = [
  ['GET /api/users?page_size=10', '/api/users?page_size=10'],
  ['GET /trpc/users.list', `/trpc/users.list?input=${encodeURIComponent(JSON.stringify({ page_size: 10 }))}`],
  ['GET /api/auth/me', '/api/auth/me'],
  ['GET /trpc/auth.me', '/trpc/auth.me'],
] as const;

/** Seeds the database `extra` describes (SQLite by default) and measures the console's rows on it. */
async function consoleRows(database: string, extra: Record<string, string> = {}): Promise<Result[]> {
  const childEnv = { ...env, ...extra };
  await seed('seed-users.js', childEnv);
  const child = await start('dist/tools/bench/serve-console.js', childEnv);
  const auth = { authorization: `Bearer ${child.info.token}` };
  let searched = 0;
  const search = () => `/api/users?page_size=10&search=${SEARCH_TERMS[searched++ % SEARCH_TERMS.length]}`;
  const rows = [];
  for (const [name, target] of [
    ...FRONT_TARGETS,
    [
      'GET /trpc/auth.me,users.list (one batch)',
      `/trpc/auth.me,users.list?batch=1&input=${encodeURIComponent(JSON.stringify({ 1: { page_size: 10 } }))}`,
    ],
    ['GET /api/users?search=<5,000 terms>', search],
    ['GET /api/tasks', '/api/tasks'],
    ['GET /api/audit-logs', '/api/audit-logs'],
  ] as const) {
    rows.push(await measure(`${name} (${database})`, child, target, auth));
  }
  // On SQLite the two lists above are kept while the database is unchanged, as it is here: these read every time.
  for (const [name, target] of [
    ['GET /api/tasks, no-cache', '/api/tasks'],
    ['GET /api/audit-logs, no-cache', '/api/audit-logs'],
  ] as const) {
    rows.push(await measure(`${name} (${database})`, child, target, { ...auth, ...NO_CACHE }));
  }
  await stop(child);
  return rows;
}

/** ClickHouse is chdb behind the tests' HTTP shim, as its own process (so its CPU is not autocannon's). */
async function clickhouseRows(): Promise<Result[]> {
  if (!chdbInstalled()) {
    console.log(`(chdb not installed under ${CHDB_PREFIX}: ClickHouse run skipped)`);
    return [];
  }
  const dir = mkdtempSync(join(tmpdir(), 'console-bench-chdb-'));
  const shim = spawn(process.execPath, ['--import', 'tsx', 'test/support/clickhouse-shim.ts', dir, '0', '', 'bench'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: shim.stdout! }).once('line', resolve);
      shim.once('exit', (code) => reject(new Error(`the clickhouse shim exited with ${code}`)));
    });
    const url = new URL(/http:\/\/\S+/.exec(line)![0]);
    return await consoleRows('clickhouse', {
      BENCH_DATABASE: JSON.stringify({
        driver: 'clickhouse',
        host: url.hostname,
        port: Number(url.port),
        schema: 'bench',
      }),
    });
  } finally {
    shim.kill('SIGTERM');
  }
}

/**
 * The task lists a frontend reads, on SQLite with no task at all, with 20 (a full page, so the rows' own cost
 * is in both), and on a backlog of 110,000 more.
 */
const BACKLOG_TARGETS = [
  ['GET /api/tasks?page_size=10', '/api/tasks?page_size=10'],
  ['GET /api/user-tasks', '/api/user-tasks'],
] as const;

/**
 * Turns each backlog row is measured in, its seconds shared between them: a multiple of the three databases, so
 * each is measured first, second and last equally often. Each turn serves every database from a fresh process:
 * two servers of one database, doing the same work in the same turns, differed by 7.4 % for the whole of a run
 * (a process's lot: its JIT, its heap's layout), which one process per database put into the ratio as if the
 * database had made it.
 */
const TURNS = 6;

/**
 * Seconds each backlog row is measured in all, twice the other rows': its ratio is the figure the backlog's 80 %
 * target is set on, and the machine's noise over a few seconds moved it by ±9 points from run to run.
 */
const BACKLOG_SECONDS = 2 * seconds;

/** One row of a target measured in several turns: its rates over all their time, its worst p50 and p99. */
function combined(turns: Result[]): Result {
  const sum = (f: (r: Result) => number) => turns.reduce((n, r) => n + f(r), 0);
  const requests = sum((r) => r.requests);
  const time = sum((r) => r.seconds);
  return {
    name: turns[0]!.name,
    requests,
    seconds: time,
    rps: requests / time,
    p50: Math.max(...turns.map((r) => r.p50)),
    p99: Math.max(...turns.map((r) => r.p99)),
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    cpuPerRequest: sum((r) => r.cpuPerRequest * r.requests) / requests,
    idleRss: turns[0]!.idleRss,
    loadRss: Math.max(...turns.map((r) => r.loadRss)),
  };
}

/** Each state's rows: per target, one result per turn. */
type Turns = Result[][];

/**
 * The three databases are served side by side and measured in turns (each target on each, then again), so a
 * burst of the shared machine's load falls on all three alike rather than on whichever ran then. The users are
 * seeded once and copied, and the backlog is added to a copy of the 20 tasks.
 */
async function backlogTurns(): Promise<{ empty: Turns; few: Turns; backlog: Turns }> {
  const base = mkdtempSync(join(tmpdir(), 'console-bench-backlog-'));
  const states = [
    ['no tasks', 'empty'],
    ['20 tasks', 'few'],
    ['110,020 tasks', 'backlog'],
  ] as const;
  const envOf = (dir: string) => ({
    ...env,
    BENCH_DB: join(base, dir, 'console.db'),
    BENCH_TASKS: '0',
    BENCH_AUDIT: '0',
  });
  await seed('seed-users.js', envOf('empty'));
  cpSync(join(base, 'empty'), join(base, 'few'), { recursive: true });
  await seed('seed-task-backlog.js', { ...envOf('few'), BENCH_BACKLOG: '20' });
  cpSync(join(base, 'few'), join(base, 'backlog'), { recursive: true });
  await seed('seed-task-backlog.js', envOf('backlog'));
  const turns: Turns[] = states.map(() => BACKLOG_TARGETS.map(() => []));
  for (let turn = 0; turn < TURNS; turn++) {
    // Each turn starts at the next database, so a drift within a turn (or a server's own work just after it
    // started) does not always fall on the same one; servers start in the order they are measured.
    const order = states.map((_, k) => (turn + k) % states.length);
    const children = new Map<number, Child>();
    try {
      for (const i of order) children.set(i, await start('dist/tools/bench/serve-console.js', envOf(states[i]![1])));
      for (const i of order) {
        const child = children.get(i)!;
        for (const [j, [name, target]] of BACKLOG_TARGETS.entries()) {
          const headers = { authorization: `Bearer ${child.info.token}`, ...NO_CACHE };
          turns[i]![j]!.push(
            await measure(`${name} (${states[i]![0]})`, child, target, headers, BACKLOG_SECONDS / TURNS),
          );
        }
      }
    } finally {
      await Promise.all([...children.values()].map(stop));
    }
  }
  const [empty, few, backlog] = turns;
  return { empty: empty!, few: few!, backlog: backlog! };
}

/**
 * The ceiling and the frontend's rows with the server pinned to one core and this process (autocannon) to the
 * other, on the SQLite database the unpinned rows used (seeded already, or now).
 */
async function pinnedRows(seeded: boolean): Promise<Result[]> {
  execFileSync('taskset', ['-a', '-pc', LOAD_CPU, String(process.pid)], { stdio: 'ignore' });
  try {
    const bareServer = await start('dist/tools/bench/serve-bare.js', env, true);
    const rows = [await measure('bare fastify GET /bare, pinned', bareServer, '/bare')];
    await stop(bareServer);
    if (!seeded) await seed('seed-users.js', env);
    const child = await start('dist/tools/bench/serve-console.js', env, true);
    const auth = { authorization: `Bearer ${child.info.token}` };
    for (const [name, target] of FRONT_TARGETS)
      rows.push(await measure(`${name} (sqlite), pinned`, child, target, auth));
    await stop(child);
    return rows;
  } finally {
    execFileSync('taskset', ['-a', '-pc', `${SERVER_CPU},${LOAD_CPU}`, String(process.pid)], { stdio: 'ignore' });
  }
}

const backlogRun = wanted('backlog') ? await backlogTurns() : undefined;
const combinedRows = (turns: Turns | undefined) => turns?.map(combined) ?? [];
const empty = combinedRows(backlogRun?.empty);
const few = combinedRows(backlogRun?.few);
const backlog = combinedRows(backlogRun?.backlog);
const rows = [
  ceiling,
  ...(wanted('sqlite') ? await consoleRows('sqlite') : []),
  ...empty,
  ...few,
  ...backlog,
  ...(wanted('clickhouse') ? await clickhouseRows() : []),
];
const pinned = wanted('pinned') ? await pinnedRows(wanted('sqlite')) : [];
console.log(
  `\nHTTP benchmark: ${connections} connections, ${seconds} s each, 10,000 users, 2,000 tasks, 20,000 audit records\n`,
);
console.log(
  'target'.padEnd(52),
  'req/s'.padStart(9),
  'p50 ms'.padStart(7),
  'p99 ms'.padStart(7),
  'of ceiling'.padStart(11),
  'CPU µs/req'.padStart(11),
  'idle RSS'.padStart(9),
  'load RSS'.padStart(9),
  ' errors',
);
/** A row of the table, its rate as a share of `top` (the ceiling measured the same way). */
const printRow = (r: Result, top: Result) =>
  console.log(
    r.name.padEnd(52),
    r.rps.toFixed(0).padStart(9),
    String(r.p50).padStart(7),
    String(r.p99).padStart(7),
    `${((r.rps / top.rps) * 100).toFixed(1)}%`.padStart(11),
    r.cpuPerRequest.toFixed(1).padStart(11),
    `${r.idleRss.toFixed(0)} MB`.padStart(9),
    `${r.loadRss.toFixed(0)} MB`.padStart(9),
    ` ${r.non2xx + r.errors}`,
  );
for (const r of rows) printRow(r, ceiling);
if (pinned.length) {
  console.log(
    `\nPinned: each server on CPU ${SERVER_CPU}, the load on CPU ${LOAD_CPU} (ratios to the pinned ceiling):`,
  );
  for (const r of pinned) printRow(r, pinned[0]!);
}
if (wanted('sqlite')) {
  const cpuRatio = (r: Result) => `${((ceiling.cpuPerRequest / r.cpuPerRequest) * 100).toFixed(1)}%`;
  console.log('\nServer CPU per request relative to the ceiling (steadier than req/s on a shared machine), SQLite:');
  for (const r of rows.slice(1).filter((row) => row.name.endsWith('(sqlite)')))
    console.log(`  ${r.name.replace(' (sqlite)', '').padEnd(45)} ${cpuRatio(r)}`);
}
if (wanted('sqlite') || wanted('clickhouse')) {
  console.log(
    'Targets: /api/users ≥ 30% of the ceiling, p99 ≤ 25 ms, idle RSS ≤ 120 MB (SQLite); p99 ≤ 50 ms on ClickHouse.',
  );
  console.log("         /trpc/users.list and the batch ≥ 25% of the ceiling, p99 ≤ twice /api/users's (SQLite).");
  console.log(
    '         /api/auth/me and /trpc/auth.me ≥ 25% of the ceiling; the uncached lists (search, tasks and audit logs no-cache) ≥ 10% (SQLite).',
  );
  console.log('         Pinned: /api/users ≥ 30% and /api/auth/me ≥ 25% of the pinned ceiling.');
}
if (backlogRun) {
  const ratio = (a: Result, b: Result) => `${((a.rps / b.rps) * 100).toFixed(1)}%`;
  console.log(
    `\nA backlog of 100,000 finished and 10,000 pending tasks against none (no-cache, req/s, same run, ${BACKLOG_SECONDS} s in ${TURNS} turns each, a fresh server per database each turn; target ≥ 80%):`,
  );
  backlog.forEach((r, i) =>
    console.log(
      `  ${BACKLOG_TARGETS[i]![0].padEnd(45)} ${ratio(r, empty[i]!)}` +
        `   (by CPU per request: ${((empty[i]!.cpuPerRequest / r.cpuPerRequest) * 100).toFixed(1)}%;` +
        ` turn by turn: ${backlogRun.backlog[i]!.map((turn, t) => ratio(turn, backlogRun.empty[i]![t]!)).join(' ')})`,
    ),
  );
  console.log('The same against 20 tasks (a full page in both, so only the table size differs):');
  backlog.forEach((r, i) => console.log(`  ${BACKLOG_TARGETS[i]![0].padEnd(45)} ${ratio(r, few[i]!)}`));
}
const failed = [...rows, ...pinned].reduce((n, r) => n + r.non2xx + r.errors, 0);
if (failed) {
  console.error(`${failed} requests failed`);
  process.exitCode = 1;
}
