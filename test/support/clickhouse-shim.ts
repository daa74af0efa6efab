/**
 * A ClickHouse HTTP interface over chdb (ClickHouse embedded in a Node addon), for the test lane only: the
 * parts @clickhouse/client uses. `/ping`; the statement in the `query` parameter, the body, or both (an
 * INSERT's rows follow it in the body); `database`; every other parameter is a setting; `param_*` binds
 * `{name:Type}` placeholders; gzip bodies both ways; errors as status 500 with `X-ClickHouse-Exception-Code`;
 * Basic authentication against one user when configured. Statements run one at a time: the session's
 * current database and settings are sticky (`USE`, `SET`) and are switched per request.
 *
 * chdb (~550 MB) is not a dependency of the project: it is installed into its own prefix
 * (`npm install --prefix .chdb chdb@3.4.0`, or `$CHDB_PREFIX`) and loaded from there.
 *
 * Run as a process: `node --import tsx test/support/clickhouse-shim.ts <data dir> <port> [user:password] [database...]`.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync, gzipSync } from 'node:zlib';

interface ChdbResult {
  readonly elapsed: number;
  readonly rowsRead: number;
  readonly bytesRead: number;
  bytes(): Uint8Array;
}

interface ChdbSession {
  queryAsync(sql: string, opts?: { format?: string }): Promise<ChdbResult>;
  queryBindAsync(sql: string, params: object, opts?: { format?: string }): Promise<ChdbResult>;
  cleanup(): void;
}

export const CHDB_PREFIX = process.env.CHDB_PREFIX ?? join(fileURLToPath(new URL('../..', import.meta.url)), '.chdb');

/** Whether chdb is installed where the shim loads it from (benchmarks skip their ClickHouse runs otherwise). */
export const chdbInstalled = (): boolean => existsSync(join(CHDB_PREFIX, 'node_modules', 'chdb'));

function loadChdb(): { Session: new (path: string) => ChdbSession } {
  try {
    return createRequire(join(CHDB_PREFIX, 'package.json'))('chdb') as { Session: new (path: string) => ChdbSession };
  } catch (error) {
    throw new Error(
      `chdb is not installed in ${CHDB_PREFIX}: npm install --prefix ${CHDB_PREFIX} chdb@3.4.0 (${(error as Error).message})`,
    );
  }
}

// Parameters that are not settings (connection, session and format controls, HTTP-only switches).
const NOT_SETTINGS = new Set([
  'query',
  'database',
  'query_id',
  'session_id',
  'session_timeout',
  'session_check',
  'user',
  'password',
  'quota_key',
  'compress',
  'decompress',
  'role',
  'default_format',
  'enable_http_compression',
  'wait_end_of_query',
]);
const isSetting = (name: string) =>
  !NOT_SETTINGS.has(name) &&
  !name.startsWith('param_') &&
  !name.startsWith('http_') &&
  !name.startsWith('send_progress');

// Bound parameters arrive TSV-escaped; chdb escapes them again.
const TSV: Record<string, string> = { '\\': '\\', '0': '\0', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', "'": "'" };
const tsvUnescape = (v: string): string | null =>
  v === '\\N' ? null : v.replace(/\\(.)/gs, (_, c: string) => TSV[c] ?? c);

const quote = (v: string) => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

export interface ShimOptions {
  /** chdb's data directory (one per process). */
  dir: string;
  port?: number;
  /** When set, requests must authenticate as this user. */
  user?: { name: string; password: string };
  /** Created at start. */
  databases?: string[];
}

export interface Shim {
  url: string;
  close(): Promise<void>;
}

function body(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function authenticated(req: IncomingMessage, user: ShimOptions['user']): boolean {
  if (!user) return true;
  const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
  const [name, password] = basic
    ? Buffer.from(basic[1]!, 'base64').toString().split(/:(.*)/s)
    : [req.headers['x-clickhouse-user'], req.headers['x-clickhouse-key']];
  const same = (a: unknown, b: string) =>
    typeof a === 'string' && a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
  return same(name, user.name) && same(password ?? '', user.password);
}

function fail(res: ServerResponse, queryId: string, message: string): void {
  const code = /Code: (\d+)/.exec(message)?.[1] ?? '1002';
  res.writeHead(500, {
    'X-ClickHouse-Exception-Code': code,
    'X-ClickHouse-Query-Id': queryId,
    'Content-Type': 'text/plain; charset=UTF-8',
  });
  res.end(message.startsWith('Code:') ? message : `Code: ${code}. DB::Exception: ${message}`);
}

export async function startShim(options: ShimOptions): Promise<Shim> {
  const { Session } = loadChdb();
  const session = new Session(options.dir);
  let chain: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = chain.then(fn, fn);
    chain = next.catch(() => {});
    return next;
  };
  for (const db of options.databases ?? []) await session.queryAsync(`create database if not exists \`${db}\``);
  let database = 'default';
  const applied = new Map<string, string>();

  /** Switches the session to this request's database and settings; only what differs is sent. */
  async function prepare(db: string, settings: Map<string, string>): Promise<void> {
    if (db !== database) {
      await session.queryAsync(`use \`${db.replace(/`/g, '\\`')}\``);
      database = db;
    }
    for (const name of [...applied.keys()]) {
      if (settings.has(name)) continue;
      await session.queryAsync(`set ${name} = DEFAULT`);
      applied.delete(name);
    }
    for (const [name, value] of settings) {
      if (applied.get(name) === value) continue;
      if (!/^\w+$/.test(name)) throw new Error(`Code: 115. DB::Exception: Unknown setting ${name}. (UNKNOWN_SETTING)`);
      await session.queryAsync(`set ${name} = ${quote(value)}`);
      applied.set(name, value);
    }
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://shim');
    if (url.pathname === '/ping' || (req.method === 'GET' && !url.searchParams.has('query'))) {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=UTF-8' }).end('Ok.\n');
      return;
    }
    const queryId = url.searchParams.get('query_id') ?? randomUUID();
    void body(req)
      .then(async (raw) => {
        if (!authenticated(req, options.user)) {
          return fail(
            res,
            queryId,
            'Code: 516. DB::Exception: app: Authentication failed: password is incorrect, or there is no user with such name. (AUTHENTICATION_FAILED)',
          );
        }
        const text = (req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString();
        const inUrl = url.searchParams.get('query');
        const sql = inUrl === null ? text : text ? `${inUrl}\n${text}` : inUrl;
        const settings = new Map<string, string>();
        const params: Record<string, string | null> = {};
        for (const [k, v] of url.searchParams) {
          if (k.startsWith('param_')) params[k.slice(6)] = tsvUnescape(v);
          else if (isSetting(k)) settings.set(k, v);
        }
        const format = url.searchParams.get('default_format') ?? 'TabSeparated';
        const result = await serial(async () => {
          await prepare(url.searchParams.get('database') ?? 'default', settings);
          return Object.keys(params).length
            ? session.queryBindAsync(sql, params, { format })
            : session.queryAsync(sql, { format });
        });
        let out = Buffer.from(result.bytes());
        const headers: Record<string, string> = {
          'Content-Type': 'text/plain; charset=UTF-8',
          'X-ClickHouse-Query-Id': queryId,
          'X-ClickHouse-Summary': JSON.stringify({
            read_rows: String(result.rowsRead),
            read_bytes: String(result.bytesRead),
            elapsed_ns: String(Math.round(result.elapsed * 1e9)),
          }),
        };
        if (
          url.searchParams.get('enable_http_compression') === '1' &&
          /\bgzip\b/.test(String(req.headers['accept-encoding']))
        ) {
          out = gzipSync(out);
          headers['Content-Encoding'] = 'gzip';
        }
        res.writeHead(200, headers).end(out);
      })
      .catch((error: unknown) =>
        fail(res, queryId, String((error as Error)?.message ?? error).replace(/^Query failed: /, '')),
      );
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          session.cleanup();
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [dir = './chdb-data', port = '8123', credentials, ...databases] = process.argv.slice(2);
  const [name, password] = credentials ? credentials.split(/:(.*)/s) : [];
  const shim = await startShim({
    dir,
    port: Number(port),
    user: name ? { name, password: password ?? '' } : undefined,
    databases,
  });
  console.log(`clickhouse shim on ${shim.url}`);
  const stop = () => void shim.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
