import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { chromiumSkip, watchProblems } from './support/chromium.ts';
import { until } from './support/engine-node.ts';
import type { TestConsole } from './support/harness.ts';
import { assertAccessible, signIn, startWebConsole, type WebConsole, XSS } from './support/web-ui.ts';

const SCHEDULE = 'Expired sessions and tokens cleanup';
const gate = () => {
  let resolve!: () => void;
  return { promise: new Promise<void>((r) => (resolve = r)), resolve: () => resolve() };
};
const steps = [gate(), gate()];

// The pages call the same API on every database (the API's tests run on each lane), so the browser part runs on SQLite.
describe('web console: tasks, a task, schedules, the user export', { skip: chromiumSkip }, () => {
  let t: TestConsole;
  let browser: Browser;
  let base: string;
  let admin: string;
  let web: WebConsole;
  before(async () => {
    ({ t, base, browser } = web = await startWebConsole());
    admin = await t.login();
    // A task that runs until it is cancelled, and one that logs markup and fails.
    t.c.engine.register('web_slow', async (ctx) => {
      ctx.progress(30);
      await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
    });
    // A task that logs a line and reports progress at each step the test allows, then waits for the next.
    t.c.engine.register('web_logging', async (ctx) => {
      for (const [i, step] of steps.entries()) {
        await step.promise;
        ctx.log.info(`step ${i + 1} done`);
        ctx.progress((i + 1) * 10);
      }
      await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
    });
    t.c.engine.register('web_markup', async (ctx) => {
      ctx.log.warn(XSS);
      throw new Error('web_markup fails');
    });
  });
  after(() => web?.close());

  // The live stream is closed on purpose when a page is left; a download ends its navigation (ERR_ABORTED).
  const newPage = async (width = 1280) => {
    const page = await browser.newPage({ viewport: { width, height: 800 } });
    const expected = (url: string) => url.includes('tasks.events') || url.includes('/api/files/');
    return { page, problems: watchProblems(page, expected) };
  };
  const task = async (id: string) => (await t.request('GET', `/api/tasks/${id}`, { token: admin })).body.data;
  const waitStatus = async (id: string, status: string) =>
    assert.ok(await until(async () => (await task(id)).status === status, 10_000), `task ${id} is not ${status}`);

  test('export users: from the click to the downloaded CSV, progress live, the task never asked again', async () => {
    const { page, problems } = await newPage();
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    await signIn(page, `${base}/admin/users`);
    await page.getByRole('button', { name: 'Export users' }).click();
    const dialog = page.getByRole('dialog', { name: 'Export users' });
    await dialog.getByRole('status').getByText('Succeeded').waitFor({ timeout: 20_000 });
    assert.equal(
      await dialog.getByRole('progressbar', { name: 'Progress of the user export' }).getAttribute('aria-valuenow'),
      '100',
    );
    await assertAccessible(page, 'export dialog');
    const download = page.waitForEvent('download');
    await dialog.getByRole('button', { name: /^Download users_export_\d{8}_\d{6}\.csv$/ }).click();
    const csv = await readFile((await (await download).path())!, 'utf8');
    assert.equal(csv.split('\r\n')[0], 'id,username,email,status,roles,created_at');
    assert.match(csv, /,admin,admin@example\.com,active,admin,/);

    const gets = requests.filter((u) => u.includes('tasks.get'));
    assert.ok(gets.length <= 1, `the task was read ${gets.length} times: ${gets.join(' ')}`);
    assert.ok(
      requests.some((u) => u.includes('tasks.events')),
      'followed on the subscription',
    );
    const token = await page.evaluate<string>("sessionStorage.getItem('console.token')");
    assert.ok(token && !requests.some((u) => u.includes(token)), 'the token is in no URL');
    assert.ok(
      requests.some((u) => /\/api\/files\/[^?]+\?expires=\d+&signature=/.test(u)),
      'a signed URL',
    );
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('a running task: filtered by type, opened, cancelled live, then deleted after a confirmation', async () => {
    const running = (await t.c.engine.create({ type: 'web_slow' }))!;
    await waitStatus(running.id, 'running');
    const { page, problems } = await newPage();
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    await signIn(page, `${base}/admin/tasks`);
    const asked = page.waitForRequest((r) => r.url().includes('tasks.list') && r.url().includes('web_slow'));
    await page.getByRole('combobox', { name: 'Task type' }).fill('web_slow');
    await asked; // filtered by the API, not in the page
    const row = page.locator(`tr[data-task-id="${running.id}"]`);
    await row.waitFor();
    await until(async () => (await page.locator('tbody tr').count()) === 1, 5_000);
    assert.equal(await page.locator('tbody tr').count(), 1, 'only the web_slow task is listed');
    assert.ok(
      requests.some((u) => u.includes('tasks.list') && u.includes('web_slow')),
      'filtered by the API',
    );
    await assertAccessible(page, 'tasks page with filters');

    await row.getByRole('link', { name: 'web_slow' }).click();
    await page.getByRole('heading', { name: 'Task web_slow' }).waitFor();
    await page.getByText('Running', { exact: true }).waitFor();
    await assertAccessible(page, 'task page');
    await page.getByRole('button', { name: 'Cancel task' }).click();
    await page.getByText('Cancelled', { exact: true }).waitFor({ timeout: 10_000 });
    await waitStatus(running.id, 'cancelled');

    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog', { name: 'Delete task' }).waitFor();
    await assertAccessible(page, 'delete task dialog');
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('heading', { name: 'Tasks' }).waitFor();
    assert.equal((await t.request('GET', `/api/tasks/${running.id}`, { token: admin })).status, 404);
    assert.ok(requests.filter((u) => u.includes('tasks.get')).length <= 1, 'the task was read once');
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('a failed task: its log line with markup is text, and Retry runs it again', async () => {
    const failed = (await t.c.engine.create({ type: 'web_markup', maxRetries: 0 }))!;
    await waitStatus(failed.id, 'failed');
    const { page, problems } = await newPage();
    await signIn(page, `${base}/admin/tasks/${failed.id}`);
    await page.getByRole('cell', { name: XSS }).waitFor();
    assert.equal(await page.locator('main img').count(), 0);
    assert.equal(await page.evaluate('window.__xss'), undefined);
    await page.getByText('web_markup fails').first().waitFor();
    await page.getByRole('button', { name: 'Retry' }).click();
    const audited = async () =>
      (await t.request('GET', '/api/audit-logs?action=retry&page_size=100', { token: admin })).body.data.some(
        (a: { resource_id: string }) => a.resource_id === failed.id,
      );
    assert.ok(await until(audited, 5_000), 'the retry reached the API');
    // It fails again, and its second run's line arrives with the change, unasked.
    await page.getByRole('cell', { name: XSS }).nth(1).waitFor({ timeout: 10_000 });
    assert.deepEqual(problems, []);
    await page.close();
  });

  test("a running task's log follows its new lines without a reload", async () => {
    const logging = (await t.c.engine.create({ type: 'web_logging' }))!;
    await waitStatus(logging.id, 'running');
    const { page, problems } = await newPage();
    await signIn(page, `${base}/admin/tasks/${logging.id}`);
    await page.getByRole('heading', { name: 'Task web_logging' }).waitFor();
    await page.getByRole('heading', { name: 'Log', exact: true }).waitFor();
    for (const [i, step] of steps.entries()) {
      step.resolve();
      await page.getByRole('cell', { name: `step ${i + 1} done` }).waitFor({ timeout: 5_000 });
    }
    assert.equal((await task(logging.id)).status, 'running', 'followed while it runs');
    await t.request('POST', `/api/tasks/${logging.id}/cancel`, { token: admin });
    await page.getByRole('cell', { name: 'task cancelled' }).waitFor({ timeout: 5_000 });
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('a user who may only look at tasks gets no task actions and no schedules link', async () => {
    const viewer = await t.userWith(['task:list', 'task:view']);
    const failed = (await t.c.engine.create({ type: 'web_markup', maxRetries: 0, creatorId: viewer.id }))!;
    await waitStatus(failed.id, 'failed');
    const { page, problems } = await newPage();
    await signIn(page, `${base}/admin/tasks/${failed.id}`, viewer.username, 'password-1');
    await page.getByRole('heading', { name: 'Task web_markup' }).waitFor();
    assert.equal(await page.getByRole('button', { name: /^(Cancel task|Retry|Delete)$/ }).count(), 0);
    assert.equal(await page.getByRole('link', { name: 'Schedules', exact: true }).count(), 0);
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('schedules: the switch turns a schedule off and on, Trigger now creates its task', async () => {
    const { page, problems } = await newPage();
    await signIn(page, `${base}/admin/`);
    await page.getByRole('link', { name: 'Schedules', exact: true }).click();
    await page.getByRole('heading', { name: 'Schedules' }).waitFor();
    // Away from the link: the shell's hover colour on the active link is not this page's to check.
    await page.mouse.move(600, 10);
    const schedule = async () =>
      (await t.request('GET', '/api/task-schedules', { token: admin })).body.data.find(
        (s: { id: string }) => s.id === 'session-cleanup',
      );
    const toggle = page.getByRole('switch', { name: SCHEDULE });
    assert.equal(await toggle.isChecked(), true);
    await assertAccessible(page, 'schedules page');
    await toggle.click({ force: true }); // Mantine's track lies over its input
    assert.ok(await until(async () => (await schedule()).enabled === false, 5_000), 'disabled through the API');
    // The page hears the answer a moment after the API has stored it.
    const trigger = page.getByRole('button', { name: `Trigger now: ${SCHEDULE}` });
    assert.ok(await until(() => trigger.isDisabled(), 5_000), 'Trigger now is off while the schedule is');
    await toggle.click({ force: true }); // Mantine's track lies over its input
    assert.ok(await until(async () => (await schedule()).enabled === true, 5_000), 'enabled again');

    const count = async () =>
      (await t.request('GET', '/api/tasks?type=session_cleanup', { token: admin })).body.total as number;
    const before = await count();
    await trigger.click();
    await page.getByText(`${SCHEDULE} started.`).waitFor();
    assert.equal(await count(), before + 1);
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('phone width: no page of these scrolls sideways', async () => {
    const slow = (await t.c.engine.create({ type: 'web_slow' }))!;
    const { page, problems } = await newPage(375);
    await signIn(page, `${base}/admin/users`);
    for (const path of ['users', 'tasks', 'schedules', `tasks/${slow.id}`]) {
      await page.goto(`${base}/admin/${path}`);
      await page.locator('main h2').waitFor();
      await page.locator('main table').first().waitFor();
      const width = await page.evaluate<number>('document.documentElement.scrollWidth');
      assert.ok(width <= 375, `${path}: ${width}px wide`);
    }
    await t.request('POST', `/api/tasks/${slow.id}/cancel`, { token: admin });
    assert.deepEqual(problems, []);
    await page.close();
  });
});
