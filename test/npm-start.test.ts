import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const IN_FLIGHT = 300;

interface Started {
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  port: number;
  /** The server's own process (npm's, the shell's or the launcher's descendant), from its log lines. */
  serverPid: number;
  output(): string;
}

/** Runs `npm start` as the README does, in a process group of its own, and waits for "console listening". */
async function npmStart(dir: string): Promise<Started & { pid: number }> {
  const child = spawn('npm', ['start', '--silent'], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      SERVER_HOST: '127.0.0.1',
      SERVER_PORT: '0',
      SERVER_SHUTDOWN_TIMEOUT: '30s',
      DATABASE_PATH: join(dir, 'console.db'),
      SERVER_FILE_UPLOAD_PATH: join(dir, 'uploads'),
      LOG_PATH: '',
      SECURITY_SCRYPT_COST: '1024',
      BOOTSTRAP_ADMIN_PASSWORD: 'admin-password-1',
    },
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  child.stderr!.on('data', (d: Buffer) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  const listening = await new Promise<{ port: number; pid: number }>((resolve, reject) => {
    // The first start of a checkout builds dist/ first (tsc, 20 s or more on a busy machine).
    const timer = setTimeout(() => reject(new Error(`npm start not listening within 150 s: ${out}`)), 150_000);
    child.stdout!.on('data', () => {
      const line = out.split('\n').find((l) => l.includes('"msg":"console listening"'));
      if (!line) return;
      clearTimeout(timer);
      resolve(JSON.parse(line) as { port: number; pid: number });
    });
    void exited.then((e) => reject(new Error(`npm start exited (${e.code ?? e.signal}): ${out}`)));
  });
  return { pid: child.pid!, exited, port: listening.port, serverPid: listening.pid, output: () => out };
}

/** A GET on a connection of its own; resolves once the connection is established, then with the answer. */
function get(port: number) {
  let connected!: () => void;
  const established = new Promise<void>((resolve) => (connected = resolve));
  const answer = new Promise<{ status?: number; error?: string; at: number }>((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, at: Date.now() }));
    });
    req.on('socket', (socket) => socket.once('connect', connected));
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message, at: Date.now() }));
    req.end();
  });
  return { established, answer };
}

test('npm start drains on SIGTERM to its process group: every request sent before is answered, npm exits after the server', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'console-npm-start-'));
  const started = await npmStart(dir);
  try {
    // A server whose event loop is busy when the signal comes: stopped, it reads nothing while the kernel
    // completes the connections and holds them (and their requests) for it, as a loaded machine does.
    process.kill(started.serverPid, 'SIGSTOP');
    const requests = Array.from({ length: IN_FLIGHT }, () => get(started.port));
    await Promise.all(requests.map((r) => r.established));
    // What a terminal's Ctrl-C, a process manager or a container runtime does: the whole group is signalled.
    process.kill(-started.pid, 'SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));
    process.kill(started.serverPid, 'SIGCONT');

    const answers = await Promise.all(requests.map((r) => r.answer));
    const failed = answers.filter((a) => a.status === undefined);
    assert.equal(failed.length, 0, `requests without an answer: ${JSON.stringify(failed.slice(0, 3))}`);
    const exit = await started.exited;
    assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null }, started.output());
    const lastAnswer = Math.max(...answers.map((a) => a.at));
    assert.ok(exit.at >= lastAnswer, 'npm exits only once its server has answered and stopped');
    assert.match(started.output(), /console stopped/);
  } finally {
    try {
      process.kill(-started.pid, 'SIGKILL');
    } catch {
      // The group is gone: the server stopped.
    }
    rmSync(dir, { recursive: true, force: true });
  }
});
