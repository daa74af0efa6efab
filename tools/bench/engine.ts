// npm run bench:engine — the task engine side by side with pg-boss and graphile-worker, in one run.
// For each: 20,000 no-op tasks at concurrency 10 (tasks/s from the first create to the last completion) and the
// heap before/after them, then a trickle of 1,000 single tasks, one at a time (create→start latency p50/p99), after
// 50 untimed; the CPU per task of the throughput run, of the node(s) and of a database server on this host (read
// from /proc). Console's engine on PostgreSQL and graphile-worker, compared on the trickle, take 3,000 each (of
// 1,000 the p99 is the tenth-worst sample, which a few stalls of the shared machine decide), in turns, 50 at a
// time, opened again after the PostgreSQL rows' throughput runs.
// Console's engine runs bare (console-node.ts: the engine alone, no HTTP, events, metrics or audit) on SQLite,
// PostgreSQL (in this process, and in three worker processes on one database), MariaDB and ClickHouse (chdb); and as
// shipped (console-full.ts: createConsole with its defaults) on SQLite, PostgreSQL and MariaDB, both creating while
// running and all created first, then run; the other two systems on the same PostgreSQL.
// PostgreSQL comes from BENCH_PG_URL or TEST_PG_URL (`eval "$(bash tools/ci/services.sh env)"` sets the latter);
// without one, only SQLite runs. BENCH_TASKS, BENCH_TRICKLE and BENCH_TRICKLE_IN_TURNS change the counts; BENCH_ONLY
// (comma-separated rows: sqlite, postgres, workers, graphile, pgboss, mariadb, clickhouse, full-sqlite,
// full-postgres, full-mariadb) runs some rows only, for quick comparisons.
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DbOptions } from '../../db/options.ts';
import { CHDB_PREFIX, chdbInstalled, startShim } from '../../test/support/clickhouse-shim.ts';
import { openFullConsole } from './console-full.ts';
import { CONCURRENCY, openConsoleNode } from './console-node.ts';
import { benchOnly } from './only.ts';
import { cpuByProcess, cpuSecondsOf, cpuSince } from './process-cpu.ts';

const TASKS = Number(process.env.BENCH_TASKS ?? 20_000);
const TRICKLE = Number(process.env.BENCH_TRICKLE ?? 1000);
/** Trickle of each of Console's engine on PostgreSQL and graphile-worker, in turns: their p99 is the 30th-worst sample. */
const TRICKLE_IN_TURNS = Number(process.env.BENCH_TRICKLE_IN_TURNS ?? 3000);
const BATCH = 1000;
const PG_URL = process.env.BENCH_PG_URL ?? process.env.TEST_PG_URL;
const MYSQL_URL = process.env.BENCH_MYSQL_URL ?? process.env.TEST_MYSQL_URL;
const wanted = benchOnly([
  'sqlite',
  'postgres',
  'workers',
  'graphile',
  'pgboss',
  'mariadb',
  'clickhouse',
  'full-sqlite',
  'full-postgres',
  'full-mariadb',
]);
/** The rows of the engine alone (console-node.ts), and of Console as shipped (console-full.ts). */
const BARE = 'console engine, bare';
const FULL = 'console (createConsole)';

interface Result {
  system: string;
  database: string;
  tasksPerSecond: number;
  p50: number;
  p99: number;
  /** CPU per task of the throughput run, in µs: the node(s) creating and running tasks, and the database server. */
  nodeCpu: number;
  dbCpu?: number;
  heapBefore: number;
  heapAfter: number;
  note?: string;
}

/** Hooks one system exposes to the measuring loops. */
interface Subject {
  /** Creates `n` tasks in one call (each system's bulk insert). */
  createMany(n: number): Promise<void>;
  createOne(): Promise<void>;
  /** Called by the subject's runner when a task starts. */
  onStart: () => void;
  stop(): Promise<void>;
  /**
   * For the all-then-run rows: the runner is registered only now, after every task was created, so the clock
   * measures the draining of a backlog rather than creating and running at once.
   */
  startRunning?(): void;
  /** Worker processes running the tasks, whose CPU counts as the node's (this process counts always). */
  pids?: number[];
}

/** The command name of each database server's processes, when it runs on this host (not in this process). */
const SERVER_PROCESS: Record<string, string> = { postgres: 'postgres', mariadb: 'mariadbd' };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const heapMb = () => {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
};
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

type Make = (onStart: () => void) => Promise<Subject>;

/** A subject open for measuring. */
interface Opened {
  subject: Subject;
  /** Resolves once `n` more tasks than now have started. */
  started(n: number): Promise<void>;
}

async function open(make: Make): Promise<Opened> {
  let count = 0;
  let wake: (() => void) | undefined;
  const subject = await make(() => {
    count++;
    wake?.();
  });
  const started = (n: number) => {
    const target = count + n;
    return new Promise<void>((resolve) => {
      wake = () => {
        if (count >= target) resolve();
      };
    });
  };
  return { subject, started };
}

type Throughput = Omit<Result, 'p50' | 'p99'>;

/**
 * The throughput of `TASKS` no-op tasks: the producer inserts in batches while the workers run; the clock stops
 * at the last start of a no-op (its completion follows within the same tick). The heap is read before and after.
 */
async function throughput(
  { subject, started }: Opened,
  system: string,
  database: string,
  note?: string,
): Promise<Throughput> {
  const createAll = async () => {
    for (let made = 0; made < TASKS; made += BATCH) await subject.createMany(Math.min(BATCH, TASKS - made));
  };
  if (subject.startRunning) await createAll();
  const heapBefore = heapMb();
  const server = SERVER_PROCESS[database];
  const dbBefore = server ? cpuByProcess(server) : undefined;
  const workersBefore = (subject.pids ?? []).map((pid) => cpuSecondsOf(pid) ?? 0);
  const cpuBefore = process.cpuUsage();
  const t0 = performance.now();
  const done = started(TASKS);
  if (subject.startRunning) subject.startRunning();
  else await createAll();
  await done;
  const tasksPerSecond = TASKS / ((performance.now() - t0) / 1000);
  const own = process.cpuUsage(cpuBefore);
  // A worker gone by now is left out rather than counted as a negative time.
  const workers = (subject.pids ?? []).reduce(
    (sum, pid, i) => sum + Math.max(0, (cpuSecondsOf(pid) ?? 0) - workersBefore[i]!),
    0,
  );
  const perTask = (seconds: number) => (seconds * 1e6) / TASKS;
  const nodeCpu = perTask((own.user + own.system) / 1e6 + workers);
  const dbCpu = server && dbBefore ? perTask(cpuSince(server, dbBefore)) : undefined;
  return { system, database, tasksPerSecond, nodeCpu, dbCpu, heapBefore, heapAfter: heapMb(), note };
}

/** Chunks of the trickle: subjects compared on it take turns a chunk at a time. */
const TRICKLE_CHUNK = 50;

/**
 * The create→start latency of `count` single tasks into idle workers, for each subject, as p50 and p99.
 * Several subjects take turns a chunk at a time, so a stall of the shared machine lasting seconds falls on each
 * alike instead of on whichever ran then: such stalls are what sets a p99.
 */
async function trickle(opened: Opened[], count: number): Promise<{ p50: number; p99: number }[]> {
  /** One task's create→start, in ms. */
  const one = async ({ subject, started }: Opened) => {
    const once = started(1);
    const c0 = performance.now();
    await subject.createOne();
    await once;
    const ms = performance.now() - c0;
    await sleep(2);
    return ms;
  };
  // A chunk untimed first: a subject opened for the trickle alone has not run this path yet.
  for (const subject of opened) for (let n = 0; n < TRICKLE_CHUNK; n++) await one(subject);
  await sleep(500);
  const latencies = opened.map((): number[] => []);
  for (let chunk = 0; chunk * TRICKLE_CHUNK < count; chunk++)
    for (let k = 0; k < opened.length; k++) {
      // Each chunk starts at the next subject, so none always follows the same one.
      const i = (chunk + k) % opened.length;
      for (let n = 0; n < Math.min(TRICKLE_CHUNK, count - chunk * TRICKLE_CHUNK); n++)
        latencies[i]!.push(await one(opened[i]!));
    }
  return latencies.map((samples) => {
    const sorted = samples.sort((a, b) => a - b);
    return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) };
  });
}

/** Runs `use` on subjects opened by `makes`, and stops each (every one, and the first failure is thrown). */
async function using<T>(makes: Make[], use: (opened: Opened[]) => Promise<T>): Promise<T> {
  const opened: Opened[] = [];
  try {
    for (const make of makes) opened.push(await open(make));
    return await use(opened);
  } finally {
    const stopped = await Promise.allSettled(opened.map(({ subject }) => subject.stop()));
    const failed = stopped.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
  }
}

/** One subject measured alone: its throughput, then its trickle. */
function measure(system: string, database: string, make: Make, note?: string): Promise<Result> {
  process.stdout.write(`running ${system} on ${database}...\n`);
  return using([make], async ([opened]) => {
    const result = await throughput(opened!, system, database, note);
    return { ...result, ...(await trickle([opened!], TRICKLE))[0]! };
  });
}

/** A subject's throughput alone, for a row whose trickle is taken with others' (`trickleInTurns`). */
function throughputAlone(system: string, database: string, make: Make, note?: string): Promise<Throughput> {
  process.stdout.write(`running ${system} on ${database}...\n`);
  return using([make], ([opened]) => throughput(opened!, system, database, note));
}

/** The trickles of subjects opened afresh, taken in turns. */
function trickleInTurns(makes: Make[]) {
  process.stdout.write('running the trickles in turns...\n');
  return using(makes, (opened) => trickle(opened, TRICKLE_IN_TURNS));
}

/** Options for a database at `url`, with tables of their own (a fresh prefix each call). */
function pgOptions(url: string, driver: DbOptions['driver'] = 'postgres'): DbOptions {
  const u = new URL(url);
  return {
    driver,
    tablePrefix: `bench${randomBytes(3).toString('hex')}_`,
    slowThresholdMs: 60_000,
    path: '',
    host: u.hostname,
    port: Number(u.port || (driver === 'mysql' ? 3306 : 5432)),
    username: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    schema: u.pathname.slice(1),
    charset: 'utf8mb4',
    collation: driver === 'mysql' ? 'utf8mb4_unicode_ci' : '',
    maxOpenConnections: 10,
    maxIdleConnections: 10,
    connectionLifetimeMs: 30_000,
    readTimeoutMs: 10_000,
    dialTimeoutMs: 10_000,
    idleTransactionTimeoutMs: 10_000,
    lockTimeoutMs: 15_000,
    maxExecutionTimeMs: 60_000,
    compression: false,
  };
}

/** Console's engine in this process. */
function consoleEngine(options: DbOptions) {
  return async (onStart: () => void): Promise<Subject> => {
    const node = await openConsoleNode(options);
    node.engine.register('noop', async () => void onStart());
    await node.engine.start();
    return {
      onStart,
      createMany: async (n) => void (await node.engine.createMany(Array.from({ length: n }, () => ({ type: 'noop' })))),
      createOne: async () => void (await node.engine.create({ type: 'noop' })),
      stop: () => node.close(true),
    };
  };
}

/**
 * Console as an application runs it: `createConsole` with its defaults (events recorder, metrics, audit, the change
 * feed, HTTP listening, the log at info in a file). `allFirst` registers the runner once every task is created.
 */
function fullConsole(options: DbOptions, allFirst = false) {
  return async (onStart: () => void): Promise<Subject> => {
    const full = await openFullConsole(options);
    const { engine } = full.console;
    const register = () => engine.register('noop', async () => void onStart());
    if (!allFirst) register();
    return {
      onStart,
      createMany: async (n) => void (await engine.createMany(Array.from({ length: n }, () => ({ type: 'noop' })))),
      createOne: async () => void (await engine.create({ type: 'noop' })),
      startRunning: allFirst ? register : undefined,
      stop: () => full.close(),
    };
  };
}

/** The rows of Console at full service on one database: created while running, and all created, then run. */
async function fullRows(database: string, options: () => DbOptions): Promise<Result[]> {
  return [
    await measure(FULL, database, fullConsole(options()), 'defaults, created while running'),
    await measure(FULL, database, fullConsole(options(), true), 'defaults, all created, then run'),
  ];
}

/**
 * Console's engine in `workers` processes on one database, this process only creating tasks; every start is
 * checked against the others, so a task run twice shows in the row's note.
 */
function consoleWorkers(options: DbOptions, workers: number, twice: Set<string>) {
  return async (onStart: () => void): Promise<Subject> => {
    const node = await openConsoleNode(options);
    const seen = new Set<string>();
    const children = await Promise.all(
      Array.from({ length: workers }, async () => {
        const child = fork(fileURLToPath(new URL(`./engine-worker${extname(import.meta.url)}`, import.meta.url)), {
          execArgv: import.meta.url.endsWith('.ts') ? ['--import', 'tsx'] : [],
          env: { ...process.env, BENCH_DB: JSON.stringify(options) },
        });
        child.on('message', (ids) => {
          if (!Array.isArray(ids)) return;
          for (const id of ids as string[]) {
            if (seen.has(id)) twice.add(id);
            seen.add(id);
            onStart();
          }
        });
        await new Promise<void>((resolve) => child.once('message', () => resolve()));
        return child;
      }),
    );
    return {
      onStart,
      pids: children.map((child) => child.pid!),
      createMany: async (n) => void (await node.engine.createMany(Array.from({ length: n }, () => ({ type: 'noop' })))),
      createOne: async () => void (await node.engine.create({ type: 'noop' })),
      async stop() {
        await Promise.all(
          children.map(async (child) => {
            child.send('stop');
            await once(child, 'exit');
          }),
        );
        await node.close(true);
      },
    };
  };
}

async function graphileWorker(url: string) {
  const { run, makeWorkerUtils, Logger } = await import('graphile-worker');
  // Its default logger prints a line per job; silenced, as Console's logger is, so both measure queue work.
  const logger = new Logger(() => () => {});
  const schema = `gw_bench_${randomBytes(3).toString('hex')}`;
  return async (onStart: () => void): Promise<Subject> => {
    const runner = await run({
      connectionString: url,
      schema,
      concurrency: CONCURRENCY,
      noHandleSignals: true,
      taskList: { noop: async () => void onStart() },
      crontab: '',
      logger,
    });
    const utils = await makeWorkerUtils({ connectionString: url, schema, logger });
    return {
      onStart,
      createMany: async (n) =>
        void (await utils.addJobs(Array.from({ length: n }, () => ({ identifier: 'noop', payload: {} })))),
      createOne: async () => void (await utils.addJob('noop', {})),
      async stop() {
        await runner.stop();
        await utils.withPgClient((c) => c.query(`drop schema ${schema} cascade`));
        await utils.release();
      },
    };
  };
}

async function pgBoss(url: string) {
  const { default: PgBoss } = await import('pg-boss');
  const schema = `pgboss_bench_${randomBytes(3).toString('hex')}`;
  return async (onStart: () => void): Promise<Subject> => {
    const boss = new PgBoss({ connectionString: url, schema, max: 10 });
    boss.on('error', () => {});
    await boss.start();
    await boss.createQueue('noop');
    // Tuned as the reference measurement: 100 jobs per fetch, 0.5 s polling (the defaults manage ~5 tasks/s),
    // with one worker per unit of concurrency.
    for (let i = 0; i < CONCURRENCY; i++) {
      await boss.work('noop', { batchSize: 100, pollingIntervalSeconds: 0.5 }, async (jobs) => {
        for (const _ of jobs) onStart();
      });
    }
    return {
      onStart,
      createMany: (n) => boss.insert(Array.from({ length: n }, () => ({ name: 'noop', data: {} }))),
      createOne: async () => void (await boss.send('noop', {})),
      async stop() {
        await boss.stop({ graceful: false, wait: true, timeout: 2000 });
        const { Client } = (await import('pg')).default;
        const c = new Client({ connectionString: url });
        await c.connect();
        await c.query(`drop schema ${schema} cascade`);
        await c.end();
      },
    };
  };
}

const results: Result[] = [];
const sqlitePath = join(mkdtempSync(join(tmpdir(), 'bench-engine-')), 'console.db');
const sqlite: DbOptions = {
  ...pgOptions('postgres://x@localhost/x'),
  driver: 'sqlite',
  path: sqlitePath,
  maxOpenConnections: 1,
  maxIdleConnections: 1,
};
const inTurns =
  PG_URL && (wanted('postgres') || wanted('graphile'))
    ? ` (${TRICKLE_IN_TURNS} for Console's engine on PostgreSQL and graphile-worker)`
    : '';
console.log(
  `${TASKS} no-op tasks at concurrency ${CONCURRENCY}, then ${TRICKLE} single tasks one at a time${inTurns} (Node ${process.version})\n`,
);
if (wanted('sqlite')) results.push(await measure(BARE, 'sqlite', consoleEngine(sqlite)));
if (wanted('full-sqlite'))
  results.push(
    ...(await fullRows('sqlite', () => ({
      ...sqlite,
      path: join(mkdtempSync(join(tmpdir(), 'bench-full-')), 'console.db'),
    }))),
  );
if (PG_URL) {
  // Console's engine and graphile-worker, the two compared on the trickle, each measure their
  // throughput alone, then take their trickles in turns, opened afresh (on new tables: the trickle's statements
  // read no finished task). The rows are printed in this order.
  const rows = new Map<'postgres' | 'workers' | 'graphile' | 'pgboss', Result>();
  const paired = new Map<'postgres' | 'graphile', { row: Throughput; again: Make }>();
  const consolePg = () => consoleEngine(pgOptions(PG_URL));
  if (wanted('postgres'))
    paired.set('postgres', {
      row: await throughputAlone(BARE, 'postgres', consolePg()),
      again: consolePg(),
    });
  if (wanted('workers')) {
    const twice = new Set<string>();
    const result = await measure(
      'console engine ×3 processes',
      'postgres',
      consoleWorkers(pgOptions(PG_URL), 3, twice),
    );
    rows.set('workers', { ...result, note: twice.size ? `${twice.size} tasks ran twice` : 'no task ran twice' });
  }
  if (wanted('graphile')) {
    const note = 'defaults, concurrency 10';
    const row = await throughputAlone('graphile-worker 0.17', 'postgres', await graphileWorker(PG_URL), note);
    paired.set('graphile', { row, again: await graphileWorker(PG_URL) });
  }
  if (wanted('pgboss'))
    rows.set(
      'pgboss',
      await measure('pg-boss 10', 'postgres', await pgBoss(PG_URL), 'tuned: 100 per fetch, 0.5 s poll'),
    );
  if (paired.size) {
    const latencies = await trickleInTurns([...paired.values()].map((p) => p.again));
    [...paired].forEach(([key, { row }], i) => rows.set(key, { ...row, ...latencies[i]! }));
  }
  if (rows.has('postgres')) results.push(rows.get('postgres')!);
  if (wanted('full-postgres')) results.push(...(await fullRows('postgres', () => pgOptions(PG_URL))));
  for (const key of ['workers', 'graphile', 'pgboss'] as const) if (rows.has(key)) results.push(rows.get(key)!);
} else {
  console.log('(no BENCH_PG_URL or TEST_PG_URL: PostgreSQL runs skipped)\n');
}
if (MYSQL_URL) {
  const mysql = () => pgOptions(MYSQL_URL, 'mysql');
  if (wanted('mariadb')) results.push(await measure(BARE, 'mariadb', consoleEngine(mysql())));
  if (wanted('full-mariadb')) results.push(...(await fullRows('mariadb', mysql)));
} else {
  console.log('(no BENCH_MYSQL_URL or TEST_MYSQL_URL: MySQL/MariaDB run skipped)\n');
}
// ClickHouse is chdb behind the tests' HTTP shim, in this process (as the clickhouse test lane runs it).
if (wanted('clickhouse') && chdbInstalled()) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-chdb-'));
  const shim = await startShim({ dir, databases: ['bench'] });
  const u = new URL(shim.url);
  const ch: DbOptions = {
    ...pgOptions(shim.url),
    driver: 'clickhouse',
    port: Number(u.port),
    schema: 'bench',
    maxOpenConnections: 5,
  };
  results.push(await measure(BARE, 'clickhouse', consoleEngine(ch)));
  await shim.close();
  rmSync(dir, { recursive: true, force: true });
} else if (wanted('clickhouse')) {
  console.log(`(chdb not installed under ${CHDB_PREFIX}: ClickHouse run skipped)\n`);
}

const fmt = (n: number, d = 0) => n.toFixed(d);
const rows = [
  [
    'system',
    'database',
    'tasks/s',
    'create→start p50 ms',
    'p99 ms',
    'node CPU µs/task',
    'db CPU µs/task',
    'heap MB before→after',
    'note',
  ],
  ...results.map((r) => [
    r.system,
    r.database,
    fmt(r.tasksPerSecond),
    fmt(r.p50, 1),
    fmt(r.p99, 1),
    fmt(r.nodeCpu),
    r.dbCpu === undefined ? '-' : fmt(r.dbCpu),
    `${fmt(r.heapBefore)}→${fmt(r.heapAfter)}`,
    r.note ?? '',
  ]),
];
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
for (const r of rows)
  console.log(
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd(),
  );
const graphile = results.find((r) => r.system.startsWith('graphile-worker'));
const shipped = results.find((r) => r.system === FULL && r.database === 'postgres');
if (graphile && shipped)
  console.log(
    `\nConsole as shipped (createConsole, created while running) / graphile-worker on PostgreSQL: ${fmt(shipped.tasksPerSecond / graphile.tasksPerSecond, 2)} ×`,
  );
rmSync(sqlitePath, { force: true });
process.exit(0);
