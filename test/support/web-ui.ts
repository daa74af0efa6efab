import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import type { ConsoleConfigInput } from '../../server/config/schema.ts';
import { launchChromium } from './chromium.ts';
import { ADMIN_PASSWORD, lanes, startConsole, type TestConsole } from './harness.ts';
import { ensureWebBuild } from './web-build.ts';

/** What the browser tests of the web console share: their console and browser, axe, signing in, fields, a proxy. */
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
export const XSS = '<img src=x onerror="window.__xss=1">';

/** Axe's serious and critical findings on the page as it is now (its script run through the debugger, not the page). */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const found = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (o: object) => Promise<{ violations: any[] }> } }).axe;
    const { violations } = await axe.run({ resultTypes: ['violations'] });
    return violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map(
        (v) =>
          `${v.id}: ${v.nodes.map((n: { target: string[]; failureSummary?: string }) => n.target.join(' ') + ' ' + (n.failureSummary ?? '')).join(', ')}`,
      );
  });
  return found;
}

/** Both colour schemes of the page pass axe. */
export async function assertAccessible(page: Page, what: string) {
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme });
    await page.waitForTimeout(100);
    assert.deepEqual(await seriousViolations(page), [], `${what} (${colorScheme})`);
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

/** A reverse proxy that serves the service under `prefix`, stripping it, as a front web server would. */
export function prefixProxy(prefix: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    if (!req.url?.startsWith(prefix)) return res.writeHead(404).end();
    const upstream = httpRequest(
      { port, host: '127.0.0.1', path: req.url.slice(prefix.length - 1), method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      },
    );
    req.pipe(upstream);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

export const field = (page: Page, name: string) => page.getByRole('textbox', { name, exact: true });

export async function signIn(page: Page, url: string, username = 'admin', password = ADMIN_PASSWORD) {
  await page.goto(url);
  await field(page, 'Username').fill(username);
  await field(page, 'Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: /User menu/ }).waitFor();
}

/** A browser test file's console, serving the built UI, and its one Chromium. */
export interface WebConsole {
  t: TestConsole;
  /** The service's address, e.g. http://127.0.0.1:40123 (the console is under /admin). */
  base: string;
  browser: Browser;
  close(): Promise<void>;
}

/**
 * What a browser test file's `before` starts: the UI built if it is not, a console on the SQLite lane (the pages
 * call the same API on every database, whose own tests run on each lane) listening, and one Chromium.
 */
export async function startWebConsole(overrides: ConsoleConfigInput = {}): Promise<WebConsole> {
  ensureWebBuild();
  const t = await startConsole(lanes()[0]!, overrides);
  try {
    const base = `http://127.0.0.1:${(await t.c.listen()).port}`;
    const browser = await launchChromium();
    const close = async () => {
      await browser.close();
      await t.close();
    };
    return { t, base, browser, close };
  } catch (error) {
    await t.close();
    throw error;
  }
}
