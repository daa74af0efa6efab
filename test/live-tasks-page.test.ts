import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
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
  before(async () => {
    pages = await serveLiveTasksPage(0);
    t = await startConsole(lanes()[0]!, { server: { cors_origins: [pages.origin] } });
    consoleUrl = `http://127.0.0.1:${(await t.c.listen()).port}`;
    await seedUsers(t, USERS);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await pages?.close();
  });

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

  test('logs in, follows a user export live to 100 % and downloads its CSV through the link', async () => {
    const { page, problems, urls } = await open();
    await page.fill('#password', ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.locator('#who', { hasText: 'logged in as admin' }).waitFor({ timeout: 15_000 });

    await page.getByRole('button', { name: 'Export users as CSV' }).click();
    const link = page.locator('#download');
    // The link shows once the export succeeded; an error the page shows (the stream refused, the export failed)
    // ends the wait early.
    await page.locator('#download:not([hidden]), #error:not(:empty)').first().waitFor({ timeout: 60_000 });
    assert.equal(await page.locator('#error').innerText(), '');
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
    assert.ok(
      urls.some((u) => new URL(u).pathname === '/api/tasks/events' && new URL(u).searchParams.has('ticket')),
      urls.join('\n'),
    );
    assert.deepEqual(
      urls.filter((u) => u.includes('eyJ')),
      [],
    );

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

  test('a wrong password shows the error envelope and leaves the export disabled', async () => {
    const { page, problems } = await open();
    await page.fill('#password', 'not-the-password');
    await page.getByRole('button', { name: 'Log in' }).click();
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
