import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { openDatabase, type Database } from '../../db/database.ts';
import { createConsole, type Console, type ConsoleOptions } from '../../index.ts';
import { loadConfig } from '../../server/config/load.ts';
import type { ConsoleConfigInput } from '../../server/config/schema.ts';
import { databaseOptions } from '../../server/database-options.ts';

export const ADMIN_PASSWORD = 'admin-password-1';

export interface Lane {
  name: 'sqlite' | 'postgres' | 'mysql' | 'clickhouse';
  /** Database keys for a fresh, isolated schema (a unique table prefix on shared servers). */
  database(): NonNullable<ConsoleConfigInput['database']>;
}

function fromUrl(driver: 'postgres' | 'mysql' | 'clickhouse', raw: string) {
  const u = new URL(raw);
  return {
    driver,
    host: u.hostname,
    port: Number(u.port),
    username: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    schema: u.pathname.replace(/^\//, ''),
  } as const;
}

const uniquePrefix = () => `t${randomBytes(4).toString('hex')}_`;

/**
 * SQLite always; PostgreSQL, MariaDB and ClickHouse (chdb behind test/support/clickhouse-shim.ts) when
 * TEST_PG_URL / TEST_MYSQL_URL / TEST_CLICKHOUSE_URL are set.
 */
export function lanes(): Lane[] {
  const out: Lane[] = [
    {
      name: 'sqlite',
      database: () => ({
        driver: 'sqlite',
        path: join(mkdtempSync(join(tmpdir(), 'console-test-')), 'console.db'),
        table_prefix: 't_',
      }),
    },
  ];
  const pg = process.env.TEST_PG_URL;
  if (pg)
    out.push({
      name: 'postgres',
      database: () => ({ ...fromUrl('postgres', pg), table_prefix: uniquePrefix(), max_open_connections: 5 }),
    });
  const my = process.env.TEST_MYSQL_URL;
  if (my)
    out.push({
      name: 'mysql',
      database: () => ({ ...fromUrl('mysql', my), table_prefix: uniquePrefix(), max_open_connections: 5 }),
    });
  const ch = process.env.TEST_CLICKHOUSE_URL;
  if (ch)
    out.push({
      name: 'clickhouse',
      database: () => ({ ...fromUrl('clickhouse', ch), table_prefix: uniquePrefix(), max_open_connections: 5 }),
    });
  return out;
}

/** A database opened from `database.*` keys through the config loader, as `createConsole` does (not migrated). */
export function openTestDatabase(database: NonNullable<ConsoleConfigInput['database']>): Database {
  return openDatabase(databaseOptions(loadConfig({ config: { database }, env: {} })), pino({ level: 'silent' }));
}

/** Settings that keep tests fast and quiet: cheap hashing, no rate limits, no log files, a known admin password. */
export function testConfig(lane: Lane, overrides: ConsoleConfigInput = {}): ConsoleConfigInput {
  const base: ConsoleConfigInput = {
    server: { port: 0, host: '127.0.0.1', file_upload_path: mkdtempSync(join(tmpdir(), 'console-uploads-')) },
    database: lane.database(),
    log: { path: '', level: 'error' },
    security: { scrypt_cost: 1024 },
    rate_limit: { enabled: false },
    bootstrap: { admin_password: ADMIN_PASSWORD },
  };
  const merged = structuredClone(base) as Record<string, Record<string, unknown>>;
  for (const [section, values] of Object.entries(overrides))
    merged[section] = { ...(merged[section] ?? {}), ...(values as object) };
  return merged as ConsoleConfigInput;
}

export interface Reply<T = any> {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: T;
  text: string;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Sent as is (for malformed JSON tests). */
  raw?: string;
}

export interface TestConsole {
  c: Console;
  lane: Lane;
  /** The database keys it was started with: another console started with them shares its tables (a second node). */
  database: NonNullable<ConsoleConfigInput['database']>;
  request<T = any>(method: string, url: string, opts?: RequestOptions): Promise<Reply<T>>;
  login(username?: string, password?: string): Promise<string>;
  /** Creates a user holding the given permissions (through a fresh role) and returns its id and token. */
  userWith(permissions: string[], name?: string): Promise<{ id: string; token: string; username: string }>;
  close(): Promise<void>;
}

/** Drops every table with this console's prefix, so shared PostgreSQL/MariaDB servers stay clean. */
export async function dropOwnTables(c: Pick<Console, 'db'>): Promise<void> {
  const { knex, options, dialect } = c.db;
  // A SQLite test database is a file of its own, removed with its folder.
  if (dialect.name === 'sqlite') return;
  await dialect.dropTables(knex, await dialect.listTables(knex, `${options.tablePrefix}%`));
}

/** A pino logger whose JSON lines are collected, for tests that check what is (and is not) logged. */
export function captureLogs(level: pino.Level = 'warn'): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n'))
        if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
  return { logger: pino({ level }, stream), lines };
}

export interface HarnessOptions {
  /** Leave the tables on close, for a console that shares them with another one (closed later, which drops them). */
  keepTables?: boolean;
}

let counter = 0;

export async function startConsole(
  lane: Lane,
  overrides: ConsoleConfigInput = {},
  options: ConsoleOptions = {},
  harness: HarnessOptions = {},
): Promise<TestConsole> {
  const config = testConfig(lane, overrides);
  const c = await createConsole({
    config,
    env: {},
    configFile: undefined,
    announce: () => {},
    logger: pino({ level: 'silent' }),
    ...options,
  });
  const uploads = c.config.server.file_upload_path;

  const request = async <T = any>(method: string, url: string, opts: RequestOptions = {}): Promise<Reply<T>> => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let payload: string | undefined = opts.raw;
    if (opts.body !== undefined) {
      payload = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    } else if (opts.raw !== undefined) headers['content-type'] ??= 'application/json';
    const res = await c.http.inject({ method: method as 'GET', url, headers, payload });
    let body: unknown;
    try {
      body = res.json();
    } catch {
      body = undefined;
    }
    return { status: res.statusCode, headers: res.headers, body: body as T, text: res.body };
  };

  const login = async (username = 'admin', password = ADMIN_PASSWORD) => {
    const res = await request('POST', '/api/auth/login', { body: { username, password } });
    if (res.status !== 200) throw new Error(`login of ${username} failed: ${res.status} ${res.text}`);
    return res.body.data.token as string;
  };

  let adminToken: string | undefined;
  const userWith = async (permissions: string[], name = `user${++counter}x${randomBytes(2).toString('hex')}`) => {
    adminToken ??= await login();
    const role = await request('POST', '/api/roles', {
      token: adminToken,
      body: { name: `role-${name}`, permissions },
    });
    if (role.status !== 201) throw new Error(`role: ${role.text}`);
    const user = await request('POST', '/api/users', {
      token: adminToken,
      body: { username: name, email: `${name}@example.test`, password: 'password-1', role_ids: [role.body.data.id] },
    });
    if (user.status !== 201) throw new Error(`user: ${user.text}`);
    return { id: user.body.data.id as string, token: await login(name, 'password-1'), username: name };
  };

  return {
    c,
    lane,
    database: { ...config.database },
    request,
    login,
    userWith,
    async close() {
      if (!harness.keepTables) await dropOwnTables(c).catch(() => {});
      await c.close();
      rmSync(uploads, { recursive: true, force: true });
    },
  };
}
