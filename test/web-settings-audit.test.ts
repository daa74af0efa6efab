import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { chromiumSkip, watchProblems } from './support/chromium.ts';
import type { TestConsole } from './support/harness.ts';
import { startMailServer, type MailServer } from './support/mail-server.ts';
import { assertAccessible, field, signIn, startWebConsole, type WebConsole, XSS } from './support/web-ui.ts';

// The pages call the same API on every database (its own tests run on each lane), so this runs on SQLite.
describe('web console: settings, audit log, overview', { skip: chromiumSkip }, () => {
  let t: TestConsole;
  let browser: Browser;
  let mail: MailServer;
  let page: Page;
  let problems: string[];
  let base: string;
  let admin: string;
  let adminId: string;
  const api = async (method: string, url: string, body?: unknown) =>
    (await t.request(method, url, { token: admin, body })).body;

  let web: WebConsole;
  before(async () => {
    ({ t, browser } = web = await startWebConsole());
    base = `${web.base}/admin`;
    admin = await t.login();
    adminId = (await api('GET', '/api/auth/me')).data.id;
    mail = await startMailServer('plain');
    t.c.engine.register(
      'web_wait',
      (ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
    );
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    // A page left closes its live task stream on purpose.
    problems = watchProblems(page, (url) => url.includes('tasks.events'));
    await signIn(page, `${base}/`);
  });
  after(async () => {
    await web?.close();
    await mail?.close();
  });

  // A refusal the test provokes is a 400 the browser reports; nothing else may go wrong.
  const noProblems = (refused = 0) => {
    const found = problems.splice(0);
    assert.equal(found.filter((p) => /status of 400/.test(p)).length, refused, found.join('\n'));
    assert.deepEqual(
      found.filter((p) => !/status of 400/.test(p)),
      [],
    );
  };
  // Opened as a person does; the pointer then leaves the link, whose hover shade is not what axe should judge.
  const openPage = async (name: string) => {
    await page.getByRole('link', { name, exact: true }).click();
    await page.mouse.move(1200, 780);
  };

  test('settings: a refused value is said at its field; an accepted one is saved', async () => {
    await openPage('Settings');
    const minLength = field(page, 'password_min_length');
    await minLength.waitFor();
    await assertAccessible(page, 'settings page');
    await minLength.fill('3');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('must be at least 6').waitFor();
    assert.equal(await minLength.getAttribute('aria-invalid'), 'true');
    assert.equal((await api('GET', '/api/system/settings')).data.password_min_length, '8', 'nothing saved');
    await assertAccessible(page, 'settings page with a refused value');

    await minLength.fill('12');
    await page.getByRole('switch', { name: 'welcome_email_enabled' }).check({ force: true });
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Settings saved.').waitFor();
    const saved = (await api('GET', '/api/system/settings')).data;
    assert.equal(saved.password_min_length, '12');
    assert.equal(saved.welcome_email_enabled, 'true');
    assert.notEqual(await minLength.getAttribute('aria-invalid'), 'true');
    await api('PUT', '/api/system/settings', { password_min_length: '8', welcome_email_enabled: 'false' });
    noProblems(1);
  });

  test('SMTP: saved through the form; the test email arrives and its result is shown', async () => {
    await page.goto(`${base}/settings`);
    await field(page, 'host').fill('127.0.0.1');
    await field(page, 'port').fill(String(mail.port));
    await page.getByLabel('password', { exact: true }).fill('unused-secret');
    await field(page, 'from_email').fill('console@example.test');
    await page.getByRole('switch', { name: 'use_tls (STARTTLS)' }).uncheck({ force: true });
    await page.getByRole('button', { name: 'Save SMTP settings' }).click();
    await page.getByText('SMTP settings saved.').waitFor();
    const stored = (await api('GET', '/api/system/settings/smtp')).data;
    assert.equal(stored.port, mail.port);
    assert.equal(stored.use_tls, false);
    assert.equal(await page.getByLabel('password', { exact: true }).inputValue(), '', 'the password is not shown back');

    await page.getByRole('button', { name: 'Send test email' }).click();
    const dialog = page.getByRole('dialog', { name: 'Send test email' });
    await dialog.getByRole('textbox', { name: 'Recipient' }).fill('not-an-address');
    await dialog.getByRole('button', { name: 'Send' }).click();
    await dialog.locator('input[aria-invalid="true"]').waitFor();
    await assertAccessible(page, 'test email dialog with a refused recipient');
    const before = mail.received.length;
    await dialog.getByRole('textbox', { name: 'Recipient' }).fill('someone@example.test');
    await dialog.getByRole('button', { name: 'Send' }).click();
    await dialog.getByRole('status').waitFor();
    const received = await mail.next(before);
    assert.deepEqual(received.to, ['someone@example.test']);
    assert.equal(received.subject, 'Test email from Console');
    await assertAccessible(page, 'test email dialog, sent');
    await dialog.getByRole('button', { name: 'Close' }).first().click();
    noProblems(1);
  });

  test('audit log: a filter narrows the table and survives a reload; details with markup are text', async () => {
    const created = await api('POST', '/api/users', {
      username: 'auditxss',
      email: 'auditxss@example.test',
      password: 'password-123',
      full_name: XSS,
    });
    await openPage('Audit log');
    await page.locator('tr[data-audit-id]').first().waitFor();
    // The administrator may verify: the chain's status line shows.
    await page
      .getByRole('status')
      .filter({ hasText: /^Chain intact up to \d+$/ })
      .waitFor();
    await assertAccessible(page, 'audit log');
    const column = page.locator('tr[data-audit-id] td:nth-child(4)');
    assert.ok(
      (await column.allInnerTexts()).some((type) => type !== 'user'),
      'unfiltered, other resources show',
    );

    const expected = await api('GET', '/api/audit-logs?resource_type=user&page_size=20');
    await page.getByRole('combobox', { name: 'Resource type' }).fill('user');
    await page.waitForURL(/resource_type=user/);
    const rows = page.locator('tr[data-audit-id]');
    // Exactly as many rows as the API answers for the filter.
    await rows.nth(expected.data.length - 1).waitFor();
    await rows.nth(expected.data.length).waitFor({ state: 'detached' });
    assert.deepEqual(new Set(await column.allInnerTexts()), new Set(['user']));
    await page.reload();
    assert.equal(await page.getByRole('combobox', { name: 'Resource type' }).inputValue(), 'user');
    await page.locator('tr[data-audit-id]').first().waitFor();
    assert.deepEqual(new Set(await column.allInnerTexts()), new Set(['user']));
    assert.equal(await page.locator('tr[data-audit-id]').count(), expected.data.length);

    const record = expected.data.find(
      (a: { action: string; resource_id: string }) => a.action === 'create' && a.resource_id === created.data.id,
    );
    await page
      .locator(`tr[data-audit-id="${record.id}"]`)
      .getByRole('button', { name: /^Details of/ })
      .click();
    const dialog = page.getByRole('dialog', { name: 'Details of create user' });
    await dialog.locator('pre', { hasText: 'img src=x' }).waitFor();
    assert.match(await dialog.locator('pre').first().innerText(), /"full_name": "<img src=x onerror=/);
    assert.equal(await dialog.locator('img').count(), 0);
    assert.equal(await page.evaluate('window.__xss'), undefined);
    await assertAccessible(page, 'audit record dialog');
    await dialog.getByRole('button', { name: 'Close' }).click();

    await page.getByLabel('From', { exact: true }).fill('2999-01-01T00:00');
    await page.getByText('Nothing to show.').waitFor();
    assert.match(page.url(), /start_time=2999-/);
    noProblems();
  });

  test('overview: the counts match the API; task activity and the header count arrive live', async () => {
    await page.goto(`${base}/`);
    const count = (name: string) => page.getByRole('group', { name, exact: true }).locator('[data-count]');
    const users = (await api('GET', '/api/users?page_size=1')).total;
    await count('Users')
      .filter({ hasText: new RegExp(`^${users}$`) })
      .waitFor();
    const counts = (await api('GET', '/api/tasks/counts')).data;
    for (const [name, value] of [
      ['Tasks running', counts.running],
      ['Tasks pending', counts.pending],
      ['Tasks failed in the last 24 h', counts.failed],
    ])
      assert.equal(await count(name).innerText(), String(value), name);
    await assertAccessible(page, 'overview');
    // Nothing running: the count is there for screen readers only, no bare "0" in the header.
    const running = page.getByRole('status', { name: /^Running tasks: / });
    await page.getByRole('status', { name: 'Running tasks: 0' }).waitFor();
    assert.ok((await running.boundingBox())!.width <= 1, 'no count is shown while nothing runs');

    const calls: string[] = [];
    page.on('request', (r) => calls.push(r.url()));
    const task = (await t.c.engine.create({ type: 'web_wait', creatorId: adminId }))!;
    await page.locator(`[data-task-id="${task.id}"]`).getByText('Running').waitFor();
    await page.getByRole('status', { name: 'Running tasks: 1' }).waitFor();
    assert.equal(await running.textContent(), '1 running', 'a count with what it counts');
    await count('Tasks running')
      .filter({ hasText: /^[1-9]/ })
      .waitFor();
    assert.equal(calls.filter((u) => /tasks\.(list|get)|user-tasks/.test(u)).length, 0, 'no task was asked for');
    await api('POST', `/api/tasks/${task.id}/cancel`);
    await page.getByRole('status', { name: 'Running tasks: 0' }).waitFor();
    assert.ok((await running.boundingBox())!.width <= 1, 'hidden again');
    noProblems();
  });

  test('overview and settings show only what the caller may see', async () => {
    const viewer = await t.userWith(['user:list', 'system:settings:view']);
    const other = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const seen = watchProblems(other);
    await signIn(other, `${base}/`, viewer.username, 'password-1');
    await other.getByRole('group', { name: 'Users', exact: true }).waitFor();
    for (const name of ['Tasks running', 'Live task activity', 'Recent audit events', /^Running tasks/])
      assert.equal(await other.getByText(name).count(), 0, String(name));
    assert.equal(await other.getByRole('link', { name: 'Audit log' }).count(), 0);
    await other.getByRole('link', { name: 'Settings', exact: true }).click();
    await other.getByText('You may view these settings but not change them.').waitFor();
    assert.ok(await field(other, 'password_min_length').isDisabled());
    assert.equal(await other.getByRole('button', { name: 'Save', exact: true }).count(), 0);
    assert.equal(await other.getByText('Mail (SMTP)').count(), 0, 'SMTP is for administrators');
    assert.deepEqual(seen, []);
    await other.close();
  });

  test('phone width: no page scrolls sideways', async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    for (const path of ['', 'settings', 'audit-log?resource_type=user']) {
      await page.goto(`${base}/${path}`);
      await page.locator('main h2').waitFor();
      await page.locator('main table, main form').first().waitFor();
      const width = await page.evaluate<number>('document.documentElement.scrollWidth');
      assert.ok(width <= 375, `${path || 'overview'}: ${width}px wide`);
    }
    noProblems();
  });
});
