// A console with demo data and a signed-in Chromium page, for the web console's benchmark and screenshots: a
// SQLite database seeded by tools/bench/seed-users.ts (users, finished tasks, audit records), served by
// tools/bench/serve-console.ts with the built UI (tools/build-web.ts), and the system Chromium (TEST_CHROMIUM, else
// /usr/bin/chromium) signed in as the administrator.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { reported } from './bench/report.ts';

export interface WebDemo {
  /** The service's address, e.g. http://127.0.0.1:40123 (the console is under /admin). */
  base: string;
  token: string;
  browser: Browser;
  /** A new page of the given size, signed in as the administrator, on the overview. */
  signedIn(options?: { width?: number; height?: number; colorScheme?: 'light' | 'dark' }): Promise<Page>;
  close(): Promise<void>;
}

const PASSWORD = 'demo-password-1';
const tsx = (script: string) => [process.execPath, ['--import', 'tsx', script]] as const;

export async function startWebDemo(seed: { users: number; tasks: number; audit: number }): Promise<WebDemo> {
  const [node, buildArgs] = tsx('tools/build-web.ts');
  if (spawnSync(node, buildArgs, { stdio: 'inherit' }).status !== 0) throw new Error('the web build failed');
  const env = {
    ...process.env,
    BENCH_PASSWORD: PASSWORD,
    BENCH_DB: join(mkdtempSync(join(tmpdir(), 'console-web-demo-')), 'console.db'),
    BENCH_USERS: String(seed.users),
    BENCH_TASKS: String(seed.tasks),
    BENCH_AUDIT: String(seed.audit),
  };
  const [, seedArgs] = tsx('tools/bench/seed-users.ts');
  if (spawnSync(node, seedArgs, { stdio: 'inherit', env }).status !== 0) throw new Error('seeding failed');
  const [, serveArgs] = tsx('tools/bench/serve-console.ts');
  const server: ChildProcess = spawn(node, serveArgs, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'], env });
  const { port, token } = await reported(server, 'the console');
  const base = `http://127.0.0.1:${port}`;
  const browser = await chromium.launch({
    executablePath: process.env.TEST_CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
  return {
    base,
    token: token!,
    browser,
    async signedIn({ width = 1280, height = 800, colorScheme = 'light' } = {}) {
      const page = await browser.newPage({ viewport: { width, height }, colorScheme });
      await page.goto(`${base}/admin/`);
      await page.getByRole('textbox', { name: 'Username', exact: true }).fill('admin');
      await page.getByRole('textbox', { name: 'Password', exact: true }).fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: /User menu/ }).waitFor();
      return page;
    },
    async close() {
      await browser.close();
      server.kill('SIGTERM');
    },
  };
}
