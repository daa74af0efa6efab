import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SOURCE_CLI } from './support/source-cli.ts';

// Only what the child needs: the runner's own DATABASE_*/SERVER_* variables must not steer it.
const ENV = { PATH: process.env.PATH, SECURITY_SCRYPT_COST: '1024', RATE_LIMIT_ENABLED: 'false', SERVER_HOST: '127.0.0.1' };

interface Server {
  child: ChildProcess;
  port: number;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

/** Starts `console serve` on a free port and waits for its "console listening" log line. */
async function serve(cwd: string): Promise<Server> {
  const child = spawn(process.execPath, [...SOURCE_CLI, 'serve', '--server.port', '0'], { cwd, env: ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "console listening" line within 30 s; stdout: ${out}; stderr: ${err}`)), 30_000);
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
    // The CLI is another process: the running server learns of it through the change feed, within 2 s (DESIGN §1).
    const deadline = Date.now() + 2500;
    while ((await me(server.port, oldToken)) !== 401 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.equal(await me(server.port, oldToken), 401, 'sessions of the old password end on the running server');
    assert.ok(!readFileSync(join(cwd, 'logs', 'console.log'), 'utf8').includes(fresh), 'the new password is not logged either');
    assert.equal(await stop(server), 0);
  });

  test('reset-password of an unknown user fails with one line', () => {
    const run = cli(cwd, 'admin', 'reset-password', '--username', 'nobody');
    assert.equal(run.status, 1);
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
    assert.match(run.stderr, /nobody/);
  });
});
