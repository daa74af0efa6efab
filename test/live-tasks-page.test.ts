import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { serveLiveTasksPage, type PageServer } from '../examples/live-tasks/serve.ts';
import { chromiumSkip, launchChromium, watchProblems } from './support/chromium.ts';
import { ADMIN_PASSWORD, lanes, startConsole, type TestConsole } from './support/harness.ts';

/** Enough users that the export pages through them for a few seconds, so its progress is seen moving. */
const USERS = 10_000;

/** Inserts `n` active users straight into the table (the API would hash a password per user). */
async function seedUsers(t: TestConsole, n: number): Promise<void> {
  const { knex, t: tables, dialect } = t.c.db;
  const now = dialect.toDbTime(new Date());
  const rows = Array.from({ length: n }, (_, i) => {
    const name = `seed${String(i).padStart(5, '0')}`;
    const email = `${name}@example.test`;
    const base = { id: randomUUID(), username: name, email, username_key: name, email_key: email };
    return { ...base, password_hash: 'not-a-hash', status: 'active', created_at: now, updated_at: now };
  });
  await knex.batchInsert(tables.users, rows, 500);
}

// The page is served from an origin of its own, as a separate frontend is, and Console allows only that origin.
// The stream and the export behave alike on every database (their own tests run on each lane), so the browser
// part runs on SQLite only.
describe('live tasks page (examples/live-tasks) in a browser', { skip: chromiumSkip }, () => {
  let t: TestConsole;
  let pages: PageServer;
  let browser: Browser;
  let consoleUrl: string;
  /** The server side of each stream the page opened. */
  const streamSockets: Socket[] = [];
  before(async () => {
    pages = await serveLiveTasksPage(0);
    t = await startConsole(lanes()[0]!, { server: { cors_origins: [pages.origin] } });
    consoleUrl = `http://127.0.0.1:${(await t.c.listen()).port}`;
    t.c.http.server.on('request', (req: IncomingMessage) => {
      if (req.url?.startsWith('/api/tasks/events?')) streamSockets.push(req.socket);
    });
    await seedUsers(t, USERS);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await pages?.close();
  });

  /** Opens the page as a browser would; `urls` collects every address it requests. */
  const open = async () => {
    const page = await browser.newPage();
    // Closing a stream, and a link that turns into a download, abort their requests on purpose.
    const problems = watchProblems(
      page,
      (url, error) => error === 'net::ERR_ABORTED' && /\/api\/(tasks\/events|files\/)/.test(new URL(url).pathname),
    );
    const urls: string[] = [];
    page.on('request', (r) => urls.push(r.url()));
    await page.goto(pages.urlFor(consoleUrl));
    return { page, problems, urls };
  };

  const logIn = async (page: Page, password = ADMIN_PASSWORD) => {
    await page.fill('#password', password);
    await page.getByRole('button', { name: 'Log in' }).click();
  };

  /** Waits for the download link, or for an error the page shows (the stream refused, the export failed). */
  const settled = async (page: Page) => {
    await page.locator('#download:not([hidden]), #error:not(:empty)').first().waitFor({ timeout: 60_000 });
    assert.equal(await page.locator('#error').innerText(), '');
  };

  /** The stream requests the page made, by their query. */
  const streamQueries = (urls: string[]) =>
    urls.filter((u) => new URL(u).pathname === '/api/tasks/events').map((u) => new URL(u).searchParams);

  test('logs in, follows a user export live to 100 % and downloads its CSV through the link', async () => {
    const { page, problems, urls } = await open();
    await logIn(page);
    await page.locator('#who', { hasText: 'logged in as admin' }).waitFor({ timeout: 15_000 });
    await page.getByRole('button', { name: 'Export users as CSV' }).click();
    await settled(page);
    assert.equal(await page.locator('#bar').getAttribute('value'), '100');
    assert.equal(await page.locator('#percent').innerText(), '100');
    assert.equal(await page.locator('#status').innerText(), 'success');
    const shot = join(mkdtempSync(join(tmpdir(), 'console-live-tasks-')), 'live-tasks.png');
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`# screenshot: ${shot}`);

    // Each state the page was shown, in order: the bar moved while the export ran, not only at its end.
    const shown = await page.locator('#events li').allInnerTexts();
    const running = shown.filter((line) => /^running \d+%$/.test(line)).map((line) => parseInt(line.slice(8), 10));
    assert.ok(
      running.some((p) => p > 0 && p < 100),
      `no progress between 0 and 100 was shown: ${shown.join(', ')}`,
    );
    assert.deepEqual(
      running,
      [...running].sort((a, b) => a - b),
      `progress went backwards: ${shown.join(', ')}`,
    );
    assert.equal(shown.at(-1), 'success 100%');

    // The stream was opened with a ticket, and no address the page asked for carries the JWT.
    assert.equal(streamQueries(urls).length, 1);
    assert.ok(streamQueries(urls)[0]!.has('ticket'));
    assert.deepEqual(
      urls.filter((u) => u.includes('eyJ')),
      [],
    );

    const link = page.locator('#download');
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: 15_000 }), link.click()]);
    assert.match(download.suggestedFilename(), /^users_export_\d{8}_\d{6}\.csv$/);
    const lines = readFileSync((await download.path())!, 'utf8')
      .trimEnd()
      .split('\r\n');
    assert.equal(lines[0], 'id,username,email,status,roles,created_at');
    assert.equal(lines.length, 1 + USERS + 1, 'the header, the administrator and every seeded user');
    const names = new Set(lines.slice(1).map((line) => line.split(',')[1]));
    assert.ok(names.has('admin'));
    for (const i of [0, 1, USERS / 2, USERS - 1])
      assert.ok(names.has(`seed${String(i).padStart(5, '0')}`), `seed ${i}`);
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('a stream that breaks is reopened with a new ticket and the last event id; the export still ends at 100', async () => {
    const { page, problems, urls } = await open();
    await logIn(page);
    await page.getByRole('button', { name: 'Export users as CSV', disabled: false }).click();
    await page
      .locator('#events li', { hasText: /^running [1-9]/ })
      .first()
      .waitFor({ timeout: 30_000 });
    // The connection breaks under the stream, as a proxy or a network change would break it.
    streamSockets.at(-1)!.destroy();
    await settled(page);
    const streams = streamQueries(urls);
    assert.ok(streams.length >= 2, `the stream was opened ${streams.length} time(s)`);
    assert.equal(new Set(streams.map((q) => q.get('ticket'))).size, streams.length, 'a ticket of its own each time');
    assert.equal(streams[0]!.get('last_event_id'), null);
    assert.match(streams.at(-1)!.get('last_event_id') ?? '', /\S/);
    assert.equal((await page.locator('#events li').allInnerTexts()).at(-1), 'success 100%');
    // The broken stream is reported by the browser; nothing else went wrong.
    assert.ok(problems.some((p) => /ERR_INCOMPLETE_CHUNKED_ENCODING/.test(p)));
    assert.deepEqual(
      problems.filter((p) => !/ERR_INCOMPLETE_CHUNKED_ENCODING/.test(p)),
      [],
    );
    await page.close();
  });

  test('a wrong password shows the error envelope and leaves the export disabled', async () => {
    const { page, problems } = await open();
    await logIn(page, 'not-the-password');
    await page.locator('#error', { hasText: 'E4011' }).waitFor({ timeout: 15_000 });
    assert.equal(await page.getByRole('button', { name: 'Export users as CSV' }).isDisabled(), true);
    // The 401 itself is logged by the browser as a failed resource; nothing else went wrong.
    assert.deepEqual(
      problems.filter((p) => !/status of 401/.test(p)),
      [],
    );
    await page.close();
  });
});
