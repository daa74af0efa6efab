import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ConsoleConfigInput } from '../../server/config/schema.ts';

/**
 * A private PostgreSQL or MariaDB server in a temporary folder, on a free loopback port, that a test may stop
 * and start again (same port, same data) to take the database away from a running service. Built the way
 * tools/ci/services.sh builds the shared ones, without touching those.
 */
export interface ThrowawayServer {
  readonly kind: ThrowawayKind;
  readonly port: number;
  /** `database.*` keys for a console on this server (database `app`, user `app`). */
  database(): NonNullable<ConsoleConfigInput['database']>;
  /** Stops the server; connections are closed by it the way a restart or a crash closes them. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data folder; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it (if running) and removes its folder. */
  destroy(): Promise<void>;
}

export type ThrowawayKind = 'postgres' | 'mysql';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pgBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl')));
  versions.sort((a, b) => Number(b) - Number(a));
  return versions[0] && join(root, versions[0], 'bin');
}

const onPath = (name: string) => spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;

/**
 * Why a throwaway server of this kind cannot run here, or undefined when it can: its lane must be enabled (as
 * in CI: TEST_PG_URL / TEST_MYSQL_URL), its binaries installed, and the test must run as root (the servers
 * run as their own system users, as services.sh starts them).
 */
export function throwawayUnavailable(kind: ThrowawayKind): string | undefined {
  if (kind === 'postgres' && !process.env.TEST_PG_URL) return 'PostgreSQL lane off (TEST_PG_URL not set)';
  if (kind === 'mysql' && !process.env.TEST_MYSQL_URL) return 'MariaDB lane off (TEST_MYSQL_URL not set)';
  if (process.getuid?.() !== 0) return 'throwaway database servers need root (runuser / --user=mysql)';
  if (kind === 'postgres' && (!pgBin() || !onPath('runuser')))
    return 'PostgreSQL binaries (initdb, pg_ctl) not installed';
  if (kind === 'mysql' && !['mariadbd', 'mariadb-install-db', 'mariadb-admin', 'mariadb'].every(onPath))
    return 'MariaDB binaries not installed';
  return undefined;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

function run(command: string, args: string[], what: string): void {
  const r = spawnSync(command, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${what} failed (${r.status}): ${r.stderr || r.stdout}`);
}

/** Retries `check` until it succeeds or `ms` passes. */
async function waitFor(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await sleep(100);
  }
}

/** A folder the server's system user owns, under a root-owned temp folder it can traverse. */
function serverFolder(owner: string): { root: string; data: string } {
  const root = mkdtempSync(join(tmpdir(), 'console-throwaway-'));
  chmodSync(root, 0o755);
  const data = join(root, 'data');
  mkdirSync(data);
  const ids = spawnSync('id', ['-u', owner], { encoding: 'utf8' }).stdout.trim();
  const gid = spawnSync('id', ['-g', owner], { encoding: 'utf8' }).stdout.trim();
  chownSync(root, Number(ids), Number(gid));
  chownSync(data, Number(ids), Number(gid));
  return { root, data };
}

async function startPostgres(): Promise<ThrowawayServer> {
  const bin = pgBin()!;
  const port = await freePort();
  const { root, data } = serverFolder('postgres');
  const asPostgres = (tool: string, args: string[], what: string) =>
    run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args], what);
  // Trust: the server listens on loopback only and lives for one test file.
  asPostgres('initdb', ['-D', data, '-U', 'postgres', '-E', 'UTF8', '--locale=C.UTF-8', '--auth=trust'], 'initdb');
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${root} -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
  let running = false;
  const start = async () => {
    asPostgres(
      'pg_ctl',
      ['-D', data, '-l', join(root, 'log'), '-w', '-t', '60', '-o', options, 'start'],
      'pg_ctl start',
    );
    running = true;
  };
  const stop = async () => {
    if (!running) return;
    // Fast: open sessions are cut off (57P01), as a restart of the server does.
    asPostgres('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop'], 'pg_ctl stop');
    running = false;
  };
  await start();
  run(
    'psql',
    [
      '-h',
      root,
      '-p',
      String(port),
      '-U',
      'postgres',
      '-d',
      'postgres',
      '-qX',
      '-v',
      'ON_ERROR_STOP=1',
      '-c',
      'CREATE DATABASE app',
    ],
    'create database',
  );
  return {
    kind: 'postgres',
    port,
    database: () => ({
      driver: 'postgres',
      host: '127.0.0.1',
      port,
      username: 'postgres',
      password: '',
      schema: 'app',
      table_prefix: 't_',
      max_open_connections: 5,
    }),
    start,
    stop,
    async destroy() {
      await stop().catch(() => {});
      rmSync(root, { recursive: true, force: true });
    },
  };
}

async function startMariaDb(): Promise<ThrowawayServer> {
  const port = await freePort();
  const { root, data } = serverFolder('mysql');
  const socket = join(root, 'sock');
  run(
    'mariadb-install-db',
    [
      '--no-defaults',
      '--user=mysql',
      `--datadir=${data}`,
      '--auth-root-authentication-method=socket',
      '--skip-test-db',
    ],
    'mariadb-install-db',
  );
  let server: ChildProcess | undefined;
  const ping = () =>
    spawnSync('mariadb-admin', ['--no-defaults', `--socket=${socket}`, '-uroot', 'ping'], { stdio: 'ignore' })
      .status === 0;
  const start = async () => {
    server = spawn(
      'mariadbd',
      [
        '--no-defaults',
        '--user=mysql',
        `--datadir=${data}`,
        '--bind-address=127.0.0.1',
        `--port=${port}`,
        `--socket=${socket}`,
        `--pid-file=${join(root, 'pid')}`,
        `--log-error=${join(root, 'err.log')}`,
        '--skip-name-resolve',
        '--character-set-server=utf8mb4',
        '--collation-server=utf8mb4_unicode_ci',
        '--innodb-flush-log-at-trx-commit=0',
      ],
      { stdio: 'ignore' },
    );
    await waitFor(ping, 60_000, 'mariadbd start');
  };
  const stop = async () => {
    const s = server;
    if (!s || s.exitCode !== null) return;
    const exited = new Promise((r) => s.once('exit', r));
    s.kill('SIGTERM');
    await exited;
    server = undefined;
  };
  // A test that dies half-way must not leave a server behind.
  const onExit = () => server?.kill('SIGKILL');
  process.once('exit', onExit);
  await start();
  run(
    'mariadb',
    [
      '--no-defaults',
      `--socket=${socket}`,
      '-uroot',
      '-e',
      "CREATE DATABASE app; CREATE USER 'app'@'127.0.0.1' IDENTIFIED BY 'app'; GRANT ALL ON *.* TO 'app'@'127.0.0.1';",
    ],
    'create database',
  );
  return {
    kind: 'mysql',
    port,
    database: () => ({
      driver: 'mysql',
      host: '127.0.0.1',
      port,
      username: 'app',
      password: 'app',
      schema: 'app',
      table_prefix: 't_',
      max_open_connections: 5,
    }),
    start,
    stop,
    async destroy() {
      await stop().catch(() => {});
      process.removeListener('exit', onExit);
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export function startThrowaway(kind: ThrowawayKind): Promise<ThrowawayServer> {
  return kind === 'postgres' ? startPostgres() : startMariaDb();
}
