// bench:audit: what the audit hash chain costs (docs/audit-chain.md).
//   1. Audited writes (user updates, each one audit record) on PostgreSQL through three nodes in processes of their
//      own, with the chain and without it, in turns within one run: throughput ratio (target ≥ 85 %) and the p99
//      latency difference (target ≤ +5 ms).
//   2. `console audit verify` over BENCH_AUDIT_VERIFY_RECORDS (one million) records (target ≤ 10 s).
// PostgreSQL comes from BENCH_PG_URL or TEST_PG_URL (`eval "$(bash tools/ci/services.sh env)"` sets the latter).
// Small counts for a smoke run: BENCH_AUDIT_REQUESTS=200 BENCH_AUDIT_VERIFY_RECORDS=2000 npm run bench:audit
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { openDatabase, type Database } from '../../db/database.ts';
import { chainHead } from '../../db/repositories/audit-chain.ts';
import { canonicalJson, recordHash } from '../../lib/audit-hash.ts';
import { loadConfig } from '../../server/config/load.ts';
import { databaseOptions } from '../../server/database-options.ts';

const PG_URL = process.env.BENCH_PG_URL ?? process.env.TEST_PG_URL;
const REQUESTS = Number(process.env.BENCH_AUDIT_REQUESTS ?? 6000);
const CONCURRENCY = Number(process.env.BENCH_AUDIT_CONCURRENCY ?? 24);
const TURNS = Number(process.env.BENCH_AUDIT_TURNS ?? 3);
const VERIFY_RECORDS = Number(process.env.BENCH_AUDIT_VERIFY_RECORDS ?? 1_000_000);
const PASSWORD = 'bench-admin-password';
const TSX = ['--import', import.meta.resolve('tsx')];
const NODE = fileURLToPath(new URL('./audit-node.ts', import.meta.url));
const CLI = fileURLToPath(new URL('../../server/cli.ts', import.meta.url));

if (!PG_URL) {
  console.error('bench:audit needs PostgreSQL: set BENCH_PG_URL or TEST_PG_URL');
  process.exit(1);
}

/** The database keys as environment variables: the password never goes on a command line. */
function databaseEnv(prefix: string): Record<string, string> {
  const u = new URL(PG_URL!);
  return {
    DATABASE_DRIVER: 'postgres',
    DATABASE_HOST: u.hostname,
    DATABASE_PORT: u.port || '5432',
    DATABASE_USERNAME: decodeURIComponent(u.username),
    DATABASE_PASSWORD: decodeURIComponent(u.password),
    DATABASE_SCHEMA: u.pathname.slice(1),
    DATABASE_TABLE_PREFIX: prefix,
  };
}

function openBenchDatabase(env: Record<string, string>): Database {
  return openDatabase(databaseOptions(loadConfig({ env })), pino({ level: 'silent' }));
}

interface Node {
  child: ChildProcess;
  base: string;
}

async function startNode(env: Record<string, string>, chain: 'on' | 'off'): Promise<Node> {
  const child = spawn(process.execPath, [...TSX, NODE, '--chain', chain], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d;
      const m = /\{"port":(\d+)\}/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`a node exited with ${code}`)));
  });
  return { child, base: `http://127.0.0.1:${port}` };
}

async function stopNodes(nodes: Node[]): Promise<void> {
  await Promise.all(
    nodes.map(async (n) => {
      n.child.kill('SIGTERM');
      if (n.child.exitCode === null) await once(n.child, 'exit');
    }),
  );
}

async function call(base: string, method: string, path: string, token?: string, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { data: Record<string, unknown> };
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

interface Measured {
  perSecond: number;
  p50: number;
  p99: number;
}

/** REQUESTS user updates, CONCURRENCY at a time, spread over the nodes in turn. */
async function auditedWrites(nodes: Node[], token: string, users: string[]): Promise<Measured> {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS) {
        const i = next++;
        const started = performance.now();
        await call(nodes[i % nodes.length]!.base, 'PUT', `/api/users/${users[i % users.length]}`, token, {
          full_name: `bench ${i}`,
        });
        latencies.push(performance.now() - started);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  return { perSecond: REQUESTS / seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) };
}

async function writesRow(env: Record<string, string>): Promise<void> {
  // The first node migrates and creates the administrator; the users to update are made once.
  let nodes = [await startNode(env, 'on')];
  const token = (await call(nodes[0]!.base, 'POST', '/api/auth/login', undefined, {
    username: 'admin',
    password: PASSWORD,
  }).then((d) => d.token)) as string;
  const users: string[] = [];
  for (let i = 0; i < 50; i++)
    users.push(
      (await call(nodes[0]!.base, 'POST', '/api/users', token, {
        username: `bench${i}`,
        email: `bench${i}@example.test`,
        password: 'bench-password-1',
      }).then((d) => d.id)) as string,
    );
  await stopNodes(nodes);
  const results: Record<'on' | 'off', Measured[]> = { on: [], off: [] };
  for (let turn = 0; turn < TURNS; turn++)
    for (const chain of turn % 2 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
      nodes = await Promise.all([0, 1, 2].map(() => startNode(env, chain)));
      results[chain].push(await auditedWrites(nodes, token, users));
      await stopNodes(nodes);
    }
  const best = (rows: Measured[]) => rows.reduce((a, b) => (b.perSecond > a.perSecond ? b : a));
  const on = best(results.on);
  const off = best(results.off);
  const ratio = on.perSecond / off.perSecond;
  const p99 = on.p99 - off.p99;
  console.log(
    `audited writes, PostgreSQL, 3 nodes, ${REQUESTS} user updates × ${CONCURRENCY} at once, best of ${TURNS}`,
  );
  console.log(`  chain off: ${off.perSecond.toFixed(0)}/s  p50 ${off.p50.toFixed(1)} ms  p99 ${off.p99.toFixed(1)} ms`);
  console.log(`  chain on:  ${on.perSecond.toFixed(0)}/s  p50 ${on.p50.toFixed(1)} ms  p99 ${on.p99.toFixed(1)} ms`);
  console.log(
    `  throughput ${(ratio * 100).toFixed(1)} % of off (target ≥ 85 %: ${ratio >= 0.85 ? 'met' : 'MISSED'}); p99 ${p99 >= 0 ? '+' : ''}${p99.toFixed(1)} ms (target ≤ +5 ms: ${p99 <= 5 ? 'met' : 'MISSED'})`,
  );
}

/** VERIFY_RECORDS chained records written in bulk as docs/audit-chain.md encodes them, then the CLI walks them. */
async function verifyRow(env: Record<string, string>): Promise<void> {
  const db = openBenchDatabase(env);
  let head = await chainHead(db);
  const details = { before: { full_name: 'a' }, after: { full_name: 'b' } };
  for (let done = 0; done < VERIFY_RECORDS;) {
    const rows = [];
    for (let i = 0; i < 5000 && done < VERIFY_RECORDS; i++, done++) {
      const r = {
        id: randomUUID(),
        created_at: new Date().toISOString(),
        user_id: null,
        username: 'admin',
        action: 'update',
        resource_type: 'user',
        resource_id: String(done),
        status: 'success',
        ip: '127.0.0.1',
        user_agent: 'bench',
        org_id: null,
        details,
      };
      const seq = head.seq + 1;
      const hash = recordHash(head.hash, { ...r, seq });
      rows.push({ ...r, details: canonicalJson(details), seq, prev_hash: head.hash, hash });
      head = { seq, hash };
    }
    await db.dialect.insertRows!(db.knex, db.t.auditLogs, rows);
  }
  await db.knex(db.t.auditChain).update({ seq: head.seq, hash: head.hash });
  await db.close();
  const t0 = performance.now();
  const child = spawn(process.execPath, [...TSX, CLI, 'audit', 'verify'], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  const [code] = (await once(child, 'exit')) as [number];
  const seconds = (performance.now() - t0) / 1000;
  console.log(
    `console audit verify, PostgreSQL, ${head.seq} records: ${seconds.toFixed(1)} s (target ≤ 10 s: ${seconds <= 10 ? 'met' : 'MISSED'})`,
  );
  console.log(`  exit ${code}: ${out.trim()}`);
}

const prefix = `bench_audit_${randomBytes(3).toString('hex')}_`;
const env = {
  ...databaseEnv(prefix),
  BOOTSTRAP_ADMIN_PASSWORD: PASSWORD,
  RATE_LIMIT_ENABLED: 'false',
  SECURITY_SCRYPT_COST: '1024',
  LOG_LEVEL: 'error',
  LOG_PATH: '',
  SERVER_HOST: '127.0.0.1',
  SERVER_PORT: '0',
};
try {
  await writesRow(env);
  await verifyRow(env);
} finally {
  const db = openBenchDatabase(env);
  await db.dialect.dropTables(db.knex, await db.dialect.listTables(db.knex, `${prefix}%`));
  await db.close();
}
