import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { open } from '../lib/secret-box.ts';
import { encryptKeyProvider } from '../server/encrypt-key.ts';
import { openTestDatabase } from './support/harness.ts';
import { SOURCE_CLI } from './support/source-cli.ts';

// Only what the child needs: the runner's own DATABASE_*/SERVER_* variables must not steer it.
const ENV = {
  PATH: process.env.PATH,
  SECURITY_SCRYPT_COST: '1024',
  RATE_LIMIT_ENABLED: 'false',
  SERVER_HOST: '127.0.0.1',
};

interface Server {
  child: ChildProcess;
  port: number;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

/** Starts `console serve` on a free port and waits for its "console listening" log line. */
async function serve(cwd: string, env: Record<string, string> = {}): Promise<Server> {
  const child = spawn(process.execPath, [...SOURCE_CLI, 'serve', '--server.port', '0'], {
    cwd,
    env: { ...ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no "console listening" line within 30 s; stdout: ${out}; stderr: ${err}`)),
      30_000,
    );
    child.stdout!.on('data', (d: Buffer) => {
      out += d;
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        const entry = JSON.parse(line) as { msg?: string; port?: number };
        if (entry.msg === 'console listening') {
          clearTimeout(timer);
          resolve(entry.port!);
        }
      }
    });
    void exited.then((code) => reject(new Error(`serve exited with ${code}; stderr: ${err}`)));
  });
  return { child, port, stdout: () => out, stderr: () => err, exited };
}

async function stop(server: Server): Promise<number | null> {
  server.child.kill('SIGTERM');
  return server.exited;
}

async function loginAnswer(port: number, password: string) {
  const res = await fetch(`http://127.0.0.1:${port}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password }),
  });
  return { status: res.status, body: (await res.json()) as { data?: { token: string } } };
}

const login = async (port: number, password: string) => (await loginAnswer(port, password)).status;

async function me(port: number, token: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/api/auth/me`, { headers: { authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res.status;
}

function cli(cwd: string, ...args: string[]) {
  return spawnSync(process.execPath, [...SOURCE_CLI, ...args], { cwd, env: ENV, encoding: 'utf8', timeout: 60_000 });
}

describe('cli', () => {
  let cwd: string;
  const running: Server[] = [];
  before(() => {
    cwd = mkdtempSync(join(tmpdir(), 'console-cli-'));
  });
  after(async () => {
    for (const s of running) if (s.child.exitCode === null) await stop(s);
    rmSync(cwd, { recursive: true, force: true });
  });

  test('migrate creates and migrates a fresh SQLite database in the working folder', () => {
    const dir = mkdtempSync(join(tmpdir(), 'console-cli-migrate-'));
    try {
      const run = cli(dir, 'migrate');
      assert.equal(run.status, 0, run.stderr);
      assert.ok(existsSync(join(dir, 'console.db')));
      const again = cli(dir, 'migrate', '--database.path', join(dir, 'console.db'));
      assert.equal(again.status, 0, again.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  let generated = '';

  test('first serve prints the generated admin password once; it works and is not in the log file', async () => {
    const server = await serve(cwd);
    running.push(server);
    const matches = [...server.stdout().matchAll(/password: (\S+)/g)];
    assert.equal(matches.length, 1, server.stdout());
    generated = matches[0]![1]!;
    assert.ok(generated.length >= 12, 'a strong password');
    assert.equal(await login(server.port, generated), 200);
    assert.equal(await login(server.port, 'admin-password-1'), 401);

    assert.equal(await stop(server), 0, 'SIGTERM stops the server with exit code 0');
    const log = readFileSync(join(cwd, 'logs', 'console.log'), 'utf8');
    assert.match(log, /console listening/, 'the log file is written at all');
    assert.ok(!log.includes(generated), 'the password never reaches the log file');
    assert.ok(!server.stderr().includes(generated));
    assert.equal(server.stdout().split(generated).length - 1, 1, 'shown exactly once');
  });

  test('a second start prints no password and keeps the first one', async () => {
    const server = await serve(cwd);
    running.push(server);
    assert.doesNotMatch(server.stdout(), /password/i);
    assert.equal(await login(server.port, generated), 200);
    assert.equal(await stop(server), 0);
  });

  test('admin reset-password prints a new password; the old one stops working on a running server', async () => {
    const server = await serve(cwd);
    running.push(server);
    const before = await loginAnswer(server.port, generated);
    assert.equal(before.status, 200);
    const oldToken = before.body.data!.token;
    assert.equal(await me(server.port, oldToken), 200);

    const run = cli(cwd, 'admin', 'reset-password', '--username', 'admin');
    assert.equal(run.status, 0, run.stderr);
    const fresh = /"admin": (\S+)/.exec(run.stdout)?.[1];
    assert.ok(fresh && fresh !== generated, run.stdout);
    assert.equal(await login(server.port, fresh), 200);
    assert.equal(await login(server.port, generated), 401);
    // The CLI is another process: the running server learns of it through the change feed, within 2 s (docs/architecture.md).
    const deadline = Date.now() + 2500;
    while ((await me(server.port, oldToken)) !== 401 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    assert.equal(await me(server.port, oldToken), 401, 'sessions of the old password end on the running server');
    assert.ok(
      !readFileSync(join(cwd, 'logs', 'console.log'), 'utf8').includes(fresh),
      'the new password is not logged either',
    );
    assert.equal(await stop(server), 0);
  });

  test('reset-password of an unknown user fails with one line', () => {
    const run = cli(cwd, 'admin', 'reset-password', '--username', 'nobody');
    assert.equal(run.status, 1);
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
    assert.match(run.stderr, /nobody/);
  });
});

/** `console ...` without waiting on it, so that the test goes on talking to a server meanwhile. */
function cliAsync(cwd: string, ...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [...SOURCE_CLI, ...args], { cwd, env: ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  return new Promise((resolve) => child.on('exit', (status) => resolve({ status, stdout, stderr })));
}

describe('version and backup', () => {
  test('--version prints the package version', () => {
    const run = cli(tmpdir(), '--version');
    assert.equal(run.status, 0, run.stderr);
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    assert.equal(run.stdout.trim(), version);
  });

  test('backup copies a SQLite database while it serves; the copy holds the data and its key file opens the SMTP password', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'console-backup-'));
    const SECRET = 'smtp-password-kept-in-backup';
    const server = await serve(dir, { BOOTSTRAP_ADMIN_PASSWORD: 'admin-password-1' });
    try {
      const token = (await loginAnswer(server.port, 'admin-password-1')).body.data!.token;
      const call = async (method: string, path: string, body: unknown) => {
        const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
        const res = await fetch(`http://127.0.0.1:${server.port}/api${path}`, {
          method,
          headers,
          body: JSON.stringify(body),
        });
        await res.arrayBuffer();
        return res.status;
      };
      const user = (name: string) =>
        call('POST', '/users', { username: name, email: `${name}@example.com`, password: 'user-password-1' });
      const smtp = {
        host: 'smtp.example.com',
        port: 587,
        username: 'mailer',
        password: SECRET,
        from_email: 'console@example.com',
      };
      assert.equal(await call('PUT', '/system/settings/smtp', smtp), 200);
      assert.equal(await user('before_backup'), 201);

      // Users keep being created while the backup runs: the server goes on serving and writing.
      let writing = true;
      let written = 0;
      const writer = (async () => {
        while (writing) {
          assert.equal(await user(`during_${written}`), 201);
          written++;
        }
      })();
      const startedAt = written;
      const run = await cliAsync(dir, 'backup', join('backups', 'copy.db'));
      const duringBackup = written - startedAt;
      writing = false;
      await writer;
      assert.equal(run.status, 0, run.stderr);
      assert.ok(duringBackup > 0, 'the server wrote while the backup ran');
      assert.match(run.stdout, /Key file copied to .*console\.key/);
      const folder = join(dir, 'backups');
      assert.equal(statSync(join(folder, 'console.key')).mode & 0o777, 0o600, 'the key file stays private');

      const copy = openTestDatabase({ driver: 'sqlite', path: join(folder, 'copy.db'), table_prefix: 't_' });
      try {
        assert.deepEqual(await copy.knex.raw('pragma integrity_check'), [{ integrity_check: 'ok' }]);
        assert.ok(
          await copy.knex(copy.t.users).where({ username: 'before_backup' }).first(),
          'a user created before the backup is in the copy',
        );
        const stored = (await copy.knex(copy.t.settings).where({ key: 'smtp' }).first('value')) as { value: unknown };
        const smtp = (typeof stored.value === 'string' ? JSON.parse(stored.value) : stored.value) as {
          password_sealed: string;
        };
        // The key a console opening the copy's folder would use, read the way it reads it.
        const key = encryptKeyProvider(undefined, folder, pino({ level: 'silent' }))();
        assert.equal(open(key, smtp.password_sealed), SECRET);
      } finally {
        await copy.close();
      }
      assert.ok(
        !run.stdout.includes(readFileSync(join(folder, 'console.key'), 'utf8').trim()),
        'the key is never printed',
      );

      // A folder holding another database's key is left alone.
      const other = join(dir, 'other');
      mkdirSync(other);
      writeFileSync(join(other, 'console.key'), 'f'.repeat(64));
      const refused = await cliAsync(dir, 'backup', join('other', 'copy.db'));
      assert.equal(refused.status, 1);
      assert.match(refused.stderr, /holds another key/);
      assert.equal(readFileSync(join(other, 'console.key'), 'utf8'), 'f'.repeat(64));
    } finally {
      await stop(server);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const [driver, tool] of [
    ['postgres', /pg_dump/],
    ['mysql', /mariadb-dump/],
    ['clickhouse', /BACKUP DATABASE console|clickhouse-backup/],
  ] as const) {
    test(`backup on ${driver} answers one line naming ${tool.source}`, () => {
      const run = cli(tmpdir(), 'backup', 'copy.db', '--database.driver', driver, '--log.path', '');
      assert.equal(run.status, 1);
      assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
      assert.match(run.stderr, /SQLite databases only/);
      assert.match(run.stderr, tool);
    });
  }

  test('backup writes a private copy whatever the umask, and replaces an existing file only with --force', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'console-backup-force-'));
    const previous = process.umask(0);
    try {
      assert.equal(cli(dir, 'migrate').status, 0);
      assert.equal(statSync(join(dir, 'console.db')).mode & 0o777, 0o600, 'the database is created private');
      const first = cli(dir, 'backup', 'copy.db');
      assert.equal(first.status, 0, first.stderr);
      assert.equal(statSync(join(dir, 'copy.db')).mode & 0o777, 0o600, 'the copy is private');

      writeFileSync(join(dir, 'copy.db'), 'kept');
      const refused = cli(dir, 'backup', 'copy.db');
      assert.equal(refused.status, 1);
      assert.match(refused.stderr, /copy\.db exists; pass --force/);
      assert.equal(readFileSync(join(dir, 'copy.db'), 'utf8'), 'kept', 'an existing file is left alone');

      const forced = cli(dir, 'backup', 'copy.db', '--force');
      assert.equal(forced.status, 0, forced.stderr);
      assert.equal(statSync(join(dir, 'copy.db')).mode & 0o777, 0o600);
      const copy = openTestDatabase({ driver: 'sqlite', path: join(dir, 'copy.db'), table_prefix: 't_' });
      try {
        assert.deepEqual(
          await copy.knex(copy.t.users).count({ n: '*' }),
          [{ n: 0 }],
          'the forced copy holds the tables',
        );
      } finally {
        await copy.close();
      }
    } finally {
      process.umask(previous);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a refused backup creates no folder', () => {
    const dir = mkdtempSync(join(tmpdir(), 'console-backup-nofolder-'));
    try {
      const missing = cli(dir, 'backup', join('new', 'copy.db'), '--database.path', 'nothing-here.db');
      assert.equal(missing.status, 1);
      assert.ok(!existsSync(join(dir, 'new')), 'no folder for a refused backup');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('admin reset-password --password obeys the password policy', () => {
    const dir = mkdtempSync(join(tmpdir(), 'console-reset-policy-'));
    try {
      assert.equal(cli(dir, 'migrate').status, 0);
      const short = cli(dir, 'admin', 'reset-password', '--password', 'short');
      assert.equal(short.status, 1);
      assert.equal(short.stderr.trim().split('\n').length, 1, short.stderr);
      assert.match(short.stderr, /--password: must be between 8 and 128 characters/);
      const long = cli(dir, 'admin', 'reset-password', '--password', 'x'.repeat(129));
      assert.equal(long.status, 1);
      // A password the policy takes goes on to look the user up (none exists before the first serve).
      const fine = cli(dir, 'admin', 'reset-password', '--password', 'long-enough-1');
      assert.match(fine.stderr, /no user named "admin"/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('backup without a file, or of a SQLite database that does not exist, says so', () => {
    const dir = mkdtempSync(join(tmpdir(), 'console-backup-none-'));
    try {
      const bare = cli(dir, 'backup');
      assert.equal(bare.status, 1);
      assert.match(bare.stderr, /backup needs the file to write/);
      const missing = cli(dir, 'backup', 'copy.db', '--database.path', 'nothing-here.db');
      assert.equal(missing.status, 1);
      assert.match(missing.stderr, /no SQLite database at nothing-here\.db/);
      assert.ok(!existsSync(join(dir, 'nothing-here.db')), 'no database is created on the way');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
