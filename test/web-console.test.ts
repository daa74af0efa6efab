import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { chromiumSkip, watchProblems } from './support/chromium.ts';
import { ADMIN_PASSWORD, lanes, startConsole, type TestConsole } from './support/harness.ts';
import {
  assertAccessible,
  field,
  prefixProxy,
  signIn,
  startWebConsole,
  type WebConsole,
  XSS,
} from './support/web-ui.ts';

// The UI calls the same API on every database (its own tests run on each lane), so the browser part runs on SQLite.
describe('web console in a browser', { skip: chromiumSkip }, () => {
  let t: TestConsole;
  let behindProxy: TestConsole;
  let proxy: Server;
  let browser: Browser;
  let base: string;
  let proxied: string;
  let admin: string;
  let web: WebConsole;
  before(async () => {
    ({ t, base, browser } = web = await startWebConsole());
    behindProxy = await startConsole(lanes()[0]!, { server: { root_url: 'http://127.0.0.1/tools/console/' } });
    proxy = await prefixProxy('/tools/console/', (await behindProxy.c.listen()).port);
    proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/tools/console/`;
    admin = await t.login();
  });
  after(async () => {
    await web?.close();
    proxy?.close();
    await behindProxy?.close();
  });

  const newPage = async (width = 1280) => {
    const page = await browser.newPage({ viewport: { width, height: 800 } });
    // The header's live task stream is closed on purpose when a page is left or the session ends.
    const expected = (url: string) => url.includes('/trpc/auth.login') || url.includes('/trpc/tasks.events');
    return { page, problems: watchProblems(page, expected) };
  };

  test('sign in: a wrong password is said, the right one opens the overview; sign out returns to sign-in', async () => {
    const { page, problems } = await newPage();
    await page.goto(`${base}/`);
    await assertAccessible(page, 'sign-in page');
    await field(page, 'Username').fill('admin');
    await field(page, 'Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    assert.match(await page.getByRole('alert').innerText(), /invalid username or password/i);
    await field(page, 'Password').fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: /Welcome/ }).waitFor();
    assert.match(new URL(page.url()).pathname, /^\/admin\/?$/);
    assert.doesNotMatch(page.url(), /token|ey[A-Za-z0-9_-]{20}/);
    await assertAccessible(page, 'overview');
    for (const name of ['Overview', 'Users', 'Tasks', 'Profile'])
      assert.equal(await page.getByRole('link', { name, exact: true }).count(), 1, name);

    await page.getByRole('button', { name: /User menu/ }).click();
    await page.getByRole('menuitem', { name: 'Profile' }).click();
    await page.getByRole('heading', { name: 'Profile' }).waitFor();
    await assertAccessible(page, 'profile');
    await page.getByRole('button', { name: /User menu/ }).click();
    await page.getByRole('menuitem', { name: 'Sign out' }).click();
    await page.getByText('You are signed out.').waitFor();
    assert.equal(await page.evaluate('sessionStorage.length'), 0);
    // Only the wrong password's 401 was expected.
    assert.deepEqual(
      problems.filter((p) => !/401/.test(p)),
      [],
    );
    await page.close();
  });

  test('users: create, edit and delete, each seen through the API', async () => {
    const { page, problems } = await newPage();
    await signIn(page, `${base}/admin/users`);
    await page.getByRole('button', { name: 'Create user' }).click();
    const dialog = page.getByRole('dialog');
    await field(dialog as unknown as Page, 'Username').fill('webuser1');
    await field(dialog as unknown as Page, 'Email').fill('webuser1@example.test');
    await field(dialog as unknown as Page, 'Password').fill('password-123');
    await field(dialog as unknown as Page, 'Full name').fill('Web User');
    await assertAccessible(page, 'create user dialog');
    await dialog.getByRole('button', { name: 'Create user' }).click();
    await page.getByRole('cell', { name: 'webuser1', exact: true }).waitFor();
    const listed = await t.request('GET', '/api/users?search=webuser1', { token: admin });
    const created = listed.body.data[0];
    assert.equal(created.full_name, 'Web User');

    await page.getByRole('button', { name: 'Edit webuser1' }).click();
    await field(page.getByRole('dialog') as unknown as Page, 'Full name').fill('Web User Two');
    await page.getByRole('dialog').getByRole('button', { name: 'Save' }).click();
    await page.getByRole('cell', { name: 'Web User Two' }).waitFor();
    assert.equal(
      (await t.request('GET', `/api/users/${created.id}`, { token: admin })).body.data.full_name,
      'Web User Two',
    );

    await page.getByRole('button', { name: 'Delete webuser1' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('cell', { name: 'webuser1', exact: true }).waitFor({ state: 'detached' });
    assert.equal((await t.request('GET', `/api/users/${created.id}`, { token: admin })).status, 404);
    await assertAccessible(page, 'users page');
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('a full name with markup is shown as text, never run', async () => {
    const res = await t.request('POST', '/api/users', {
      token: admin,
      body: { username: 'xssprobe', email: 'xss@example.test', password: 'password-123', full_name: XSS },
    });
    assert.equal(res.status, 201);
    const { page, problems } = await newPage();
    await signIn(page, `${base}/admin/users`);
    await page.getByRole('cell', { name: XSS }).waitFor();
    assert.equal(await page.locator('main img').count(), 0);
    assert.equal(await page.evaluate('window.__xss'), undefined);
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('a user without admin permissions sees no admin actions, and the 403 page on an admin address', async () => {
    const viewer = await t.userWith(['user:list', 'user:view']);
    const { page, problems } = await newPage();
    await signIn(page, `${base}/admin/users`, viewer.username, 'password-1');
    await page.getByRole('cell', { name: viewer.username, exact: true }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Create user' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: /^(Edit|Delete) / }).count(), 0);
    assert.equal(await page.getByRole('link', { name: 'Tasks', exact: true }).count(), 0);
    await page.goto(`${base}/admin/tasks`);
    await page.getByRole('heading', { name: 'No access' }).waitFor();
    await assertAccessible(page, '403 page');
    await page.goto(`${base}/admin/no/such/page`);
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    await assertAccessible(page, '404 page');
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('tasks: a new task and its progress arrive live, without asking for the list again', async () => {
    const { page, problems } = await newPage();
    const listCalls: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('tasks.list')) listCalls.push(r.url());
    });
    await signIn(page, `${base}/admin/tasks`);
    await page.getByText('Live updates on').waitFor();
    await assertAccessible(page, 'tasks page');
    const calls = listCalls.length;
    const started = await t.request('POST', '/api/authorization/users/export', { token: admin, body: {} });
    assert.ok(started.status < 300, started.text);
    const row = page.locator(`tr[data-task-id="${started.body.data.id}"]`);
    await row.getByText('Succeeded').waitFor({ timeout: 20_000 });
    assert.equal(listCalls.length, calls, 'the list was not fetched again');
    await page.getByLabel('Status', { exact: true }).first().click();
    await page.getByRole('option', { name: 'Failed' }).click();
    await row.waitFor({ state: 'detached' });
    assert.deepEqual(
      problems.filter((p) => !/tasks\.events/.test(p)),
      [],
    );
    await page.close();
  });

  test('phone width: no sideways scrolling; a deep link survives a reload; the banner comes and goes', async () => {
    const { page, problems } = await newPage(375);
    await signIn(page, `${base}/admin/users`);
    await page.getByRole('button', { name: 'Create user' }).waitFor();
    for (const path of ['users', 'tasks', 'profile']) {
      await page.goto(`${base}/admin/${path}`);
      await page.locator('main h2').waitFor();
      const width = await page.evaluate<number>('document.documentElement.scrollWidth');
      assert.ok(width <= 375, `${path}: ${width}px wide`);
    }
    await page.getByRole('button', { name: 'Toggle navigation' }).click();
    await page.getByRole('dialog').getByRole('link', { name: 'Users' }).click();
    await page.getByRole('button', { name: 'Create user' }).waitFor();
    await page.reload();
    await page.getByRole('button', { name: 'Create user' }).waitFor();

    await page.route('**/trpc/**', (route) => route.abort());
    await page.route('**/healthz', (route) => route.abort());
    await page.getByRole('searchbox', { name: 'Search' }).fill('zzz');
    await page.getByText('The service cannot be reached').waitFor();
    await page.unroute('**/trpc/**');
    await page.unroute('**/healthz');
    await page.getByText('The service cannot be reached').waitFor({ state: 'detached', timeout: 10_000 });
    // Only the calls cut on purpose failed.
    assert.deepEqual(
      problems.filter((p) => !/\/trpc\/|\/healthz|ERR_FAILED/.test(p)),
      [],
    );
    await page.close();
  });

  test('the language switch shows the console in Chinese', async () => {
    const { page, problems } = await newPage();
    await signIn(page, `${base}/admin/`);
    await page.getByRole('button', { name: /User menu/ }).click();
    await page.getByRole('menuitem', { name: '简体中文' }).click();
    await page.getByRole('link', { name: '用户' }).waitFor();
    assert.equal(await page.evaluate('document.documentElement.lang'), 'zh-CN');
    await assertAccessible(page, 'overview in Chinese');
    await page.evaluate('localStorage.clear()');
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('behind a reverse proxy under a path prefix (server.root_url)', async () => {
    const { page, problems } = await newPage();
    await signIn(page, proxied);
    assert.match(new URL(page.url()).pathname, /^\/tools\/console\/admin\/?$/);
    await page.getByRole('link', { name: 'Users' }).click();
    await page.getByRole('button', { name: 'Edit admin' }).waitFor();
    await page.reload();
    await page.getByRole('button', { name: 'Edit admin' }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/tools/console/admin/users');
    assert.deepEqual(problems, []);
    await page.close();
  });
});
