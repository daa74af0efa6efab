import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Locator, Page } from 'playwright-core';
import { chromiumSkip, watchProblems } from './support/chromium.ts';
import type { TestConsole } from './support/harness.ts';
import { assertAccessible, field, signIn, startWebConsole, type WebConsole, XSS } from './support/web-ui.ts';

/** The codes of the catalogue's "Users" module, as the permissions page groups them. */
const USER_CODES = ['user:create', 'user:delete', 'user:export', 'user:list', 'user:update', 'user:view'];

// Roles, organizations, permissions and the organization switcher, driven as a person would, checked through the
// API. The pages call the same API on every database (its tests run on each lane), so this runs on SQLite.
describe('web console: roles, organizations, permissions', { skip: chromiumSkip }, () => {
  let t: TestConsole;
  let browser: Browser;
  let page: Page;
  let problems: string[];
  let base: string;
  let admin: string;
  let web: WebConsole;
  before(async () => {
    ({ t, base, browser } = web = await startWebConsole());
    admin = await t.login();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    problems = watchProblems(page);
    await signIn(page, `${base}/admin/`);
  });
  after(() => web?.close());

  const api = async (method: string, url: string, body?: unknown) => {
    const res = await t.request(method, url, { token: admin, body });
    assert.ok(res.status < 300, `${method} ${url}: ${res.text}`);
    return res.body.data;
  };
  const roleNamed = async (name: string) =>
    (await api('GET', `/api/roles?page_size=100&search=${encodeURIComponent(name)}`)).find(
      (r: { name: string }) => r.name === name,
    );
  const open = async (path: string, heading: string) => {
    await page.goto(`${base}/admin/${path}`);
    await page.getByRole('heading', { name: heading, level: 2 }).waitFor();
  };
  const dialog = () => page.getByRole('dialog');
  const choose = async (where: Page | Locator, label: string, option: string) => {
    // A multiple choice's pills box lies over its input.
    await where.getByLabel(label, { exact: true }).click({ force: true });
    await ('goto' in where ? where : where.page()).getByRole('option', { name: option, exact: true }).click();
  };

  test('the roles list, from the click on its link, never shows an empty table', async () => {
    await api('POST', '/api/roles', { name: 'steady-role' });
    for (const visit of ['first', 'later']) {
      if (visit === 'first') await page.goto(`${base}/admin/`);
      else await page.getByRole('link', { name: 'Overview', exact: true }).click();
      // The overview lists recent audit records: a table with rows before the click.
      await page.locator('main table tbody tr').first().waitFor();
      // Counted in the page at every change of <main>, so no short drop between two looks is missed.
      const counts = page.evaluate<number[]>(`new Promise((resolve) => {
        const rows = () => document.querySelectorAll('main table tbody tr').length;
        const seen = [rows()];
        const observer = new MutationObserver(() => seen.push(rows()));
        observer.observe(document.querySelector('main'), { childList: true, subtree: true });
        setTimeout(() => { observer.disconnect(); resolve(seen); }, 2500);
      })`);
      await page.getByRole('link', { name: 'Roles', exact: true }).click();
      await page.getByRole('cell', { name: 'steady-role', exact: true }).waitFor();
      const seen = await counts;
      assert.ok(!seen.includes(0), `${visit} visit, rows seen: ${seen.join(' ')}`);
    }
    assert.deepEqual(problems, []);
  });

  test('roles: the permission matrix builds a role; edit and delete it, each seen through the API', async () => {
    await open('roles', 'Roles');
    await assertAccessible(page, 'roles page');
    await page.getByRole('button', { name: 'Create role' }).click();
    await field(dialog() as unknown as Page, 'Name').fill('auditors');
    await dialog().getByRole('checkbox', { name: 'All of Users' }).check();
    await dialog().getByRole('checkbox', { name: 'List tasks' }).check();
    // A module's checkbox is part checked while only some of its permissions are.
    assert.equal(await dialog().getByRole('checkbox', { name: 'All of Tasks' }).isChecked(), false);
    await assertAccessible(page, 'create role dialog');
    await dialog().getByRole('button', { name: 'Create role' }).click();
    await page.getByRole('cell', { name: 'auditors', exact: true }).waitFor();
    const created = await roleNamed('auditors');
    assert.deepEqual(created.permissions, [...USER_CODES, 'task:list'].sort());
    assert.equal(created.org_id, null);

    await page.getByRole('button', { name: 'Edit auditors' }).click();
    await dialog().getByRole('checkbox', { name: 'Delete users' }).uncheck();
    await field(dialog() as unknown as Page, 'Description').fill('Read the records');
    await dialog().getByRole('button', { name: 'Save' }).click();
    await page.getByRole('cell', { name: 'Read the records' }).waitFor();
    const edited = await roleNamed('auditors');
    assert.deepEqual(edited.permissions, [...USER_CODES.filter((c) => c !== 'user:delete'), 'task:list'].sort());

    // A taken name is said at the name field.
    await page.getByRole('button', { name: 'Create role' }).click();
    await field(dialog() as unknown as Page, 'Name').fill('AUDITORS');
    await dialog().getByRole('button', { name: 'Create role' }).click();
    await dialog()
      .getByText(/already exists/)
      .waitFor();
    await dialog().getByRole('button', { name: 'Cancel' }).click();

    await page.getByRole('button', { name: 'Delete auditors' }).click();
    await assertAccessible(page, 'delete role dialog');
    await dialog().getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('cell', { name: 'auditors', exact: true }).waitFor({ state: 'detached' });
    assert.equal((await t.request('GET', `/api/roles/${created.id}`, { token: admin })).status, 404);
    // Only the taken name was refused.
    assert.deepEqual(problems.splice(0), [
      'error: Failed to load resource: the server responded with a status of 400 (Bad Request)',
    ]);
  });

  test("an organization's role offers only the permissions that act within one organization", async () => {
    const org = await api('POST', '/api/organizations', { name: 'Northwind' });
    await open('roles', 'Roles');
    await page.getByRole('button', { name: 'Create role' }).click();
    await field(dialog() as unknown as Page, 'Name').fill('northwind-ops');
    await choose(dialog(), 'Organization', 'Northwind');
    await dialog().getByRole('checkbox', { name: 'Cancel tasks' }).waitFor();
    assert.equal(await dialog().getByRole('checkbox', { name: 'List users' }).count(), 0);
    await dialog().getByRole('checkbox', { name: 'All of Tasks' }).check();
    await dialog().getByRole('button', { name: 'Create role' }).click();
    await page.getByRole('cell', { name: 'northwind-ops', exact: true }).waitFor();
    const role = await roleNamed('northwind-ops');
    assert.equal(role.org_id, org.id);
    assert.deepEqual(role.permissions, ['task:cancel', 'task:delete', 'task:list', 'task:retry', 'task:view']);
    assert.deepEqual(problems, []);
  });

  test('organizations: create and edit one, add a member with a role and remove them, seen through the API', async () => {
    const user = await api('POST', '/api/users', {
      username: 'member1',
      email: 'member1@example.test',
      password: 'password-123',
    });
    await open('organizations', 'Organizations');
    await page.getByRole('button', { name: 'Create organization' }).click();
    await field(dialog() as unknown as Page, 'Name').fill('Contoso');
    await field(dialog() as unknown as Page, 'Description').fill('Widgets');
    await assertAccessible(page, 'create organization dialog');
    await dialog().getByRole('button', { name: 'Create organization' }).click();
    await page.getByRole('cell', { name: 'Contoso', exact: true }).waitFor();
    const [org] = await api('GET', '/api/organizations?search=Contoso');
    assert.equal(org.description, 'Widgets');
    await assertAccessible(page, 'organizations page');

    await page.getByRole('button', { name: 'Edit Contoso' }).click();
    await choose(dialog(), 'Status', 'Disabled');
    await dialog().getByRole('button', { name: 'Save' }).click();
    await dialog().waitFor({ state: 'detached' });
    assert.equal((await api('GET', `/api/organizations/${org.id}`)).status, 'disabled');

    const role = await api('POST', '/api/roles', {
      name: 'contoso-viewers',
      permissions: ['task:list'],
      org_id: org.id,
    });
    await page.getByRole('button', { name: 'Members of Contoso' }).click();
    await dialog().getByText('No members yet.').waitFor();
    const users = dialog().getByLabel(/^User/);
    await users.fill('member1');
    await page.getByRole('option', { name: 'member1', exact: true }).click();
    await choose(dialog(), 'Roles', 'contoso-viewers');
    await dialog().getByRole('heading', { name: 'Add member' }).click();
    await assertAccessible(page, 'members dialog');
    await dialog().getByRole('button', { name: 'Add member' }).click();
    await dialog().getByRole('cell', { name: 'member1', exact: true }).waitFor();
    const members = (await api('GET', `/api/organizations/${org.id}`)).members;
    assert.deepEqual(
      members.map((m: { user_id: string; roles: { id: string }[] }) => [m.user_id, m.roles.map((r) => r.id)]),
      [[user.id, [role.id]]],
    );

    await dialog().getByRole('button', { name: 'Remove member1' }).click();
    await dialog().getByText('No members yet.').waitFor();
    assert.deepEqual((await api('GET', `/api/organizations/${org.id}`)).members, []);
    assert.deepEqual(problems, []);
  });

  test('permissions: the catalogue, read-only, grouped by module', async () => {
    await open('permissions', 'Permissions');
    for (const module of ['Users', 'Roles', 'Tasks', 'Organizations'])
      await page.getByRole('heading', { name: module, level: 3 }).waitFor();
    assert.equal(await page.getByRole('region', { name: 'Users' }).getByRole('row').count(), USER_CODES.length + 1);
    assert.equal(await page.locator('main').getByRole('checkbox').count(), 0);
    await assertAccessible(page, 'permissions page');
    assert.deepEqual(problems, []);
  });

  test('the organization switcher sends X-Scope-OrgID on every call and keeps the choice for the tab', async () => {
    const a = await api('POST', '/api/organizations', { name: 'Alpha' });
    const b = await api('POST', '/api/organizations', { name: 'Beta' });
    await api('POST', '/api/roles', { name: 'alpha-role', org_id: a.id });
    await api('POST', '/api/roles', { name: 'beta-role', org_id: b.id });
    const scopes: (string | undefined)[] = [];
    page.on('request', (r) => {
      // A batch names its calls in the path: /trpc/auth.me,roles.list
      if (/\/trpc\/[^?]*\broles\.list/.test(r.url())) scopes.push(r.headers()['x-scope-orgid']);
    });
    await open('roles', 'Roles');
    await page.getByRole('cell', { name: 'beta-role', exact: true }).waitFor();
    await choose(page.locator('header'), 'Organization', 'Alpha');
    await page.getByRole('cell', { name: 'beta-role', exact: true }).waitFor({ state: 'detached' });
    await page.getByRole('cell', { name: 'alpha-role', exact: true }).waitFor();
    assert.equal(scopes.at(-1), a.id);
    await assertAccessible(page, 'roles page acting in an organization');

    await page.reload();
    await page.getByRole('cell', { name: 'alpha-role', exact: true }).waitFor();
    assert.equal(await page.getByRole('combobox', { name: 'Organization' }).inputValue(), 'Alpha');
    assert.equal(scopes.at(-1), a.id);

    await choose(page.locator('header'), 'Organization', 'All');
    await page.getByRole('cell', { name: 'beta-role', exact: true }).waitFor();
    assert.equal(scopes.at(-1), undefined);
    assert.equal(await page.evaluate('sessionStorage.getItem("console.org")'), null);
    assert.deepEqual(problems, []);

    // An organization chosen and then deleted is forgotten at the next load, not refused on every call.
    const gone = await api('POST', '/api/organizations', { name: 'Gamma' });
    await page.reload();
    await choose(page.locator('header'), 'Organization', 'Gamma');
    await page.waitForFunction(`sessionStorage.getItem('console.org') === '${gone.id}'`);
    await api('DELETE', `/api/organizations/${gone.id}`);
    await page.reload();
    await page.getByRole('cell', { name: 'beta-role', exact: true }).waitFor();
    assert.equal(await page.getByRole('combobox', { name: 'Organization' }).inputValue(), 'All');
    assert.equal(await page.evaluate('sessionStorage.getItem("console.org")'), null);
    // Only the calls made before the list said so were refused.
    assert.deepEqual(
      problems.splice(0).filter((p) => !/status of 404/.test(p)),
      [],
    );
  });

  test('a name with markup is shown as text, never run', async () => {
    await api('POST', '/api/roles', { name: XSS, description: XSS });
    await api('POST', '/api/organizations', { name: XSS, description: XSS });
    for (const [path, heading] of [
      ['roles', 'Roles'],
      ['organizations', 'Organizations'],
    ]) {
      await open(path!, heading!);
      await page.getByRole('cell', { name: XSS }).first().waitFor();
      assert.equal(await page.locator('main img').count(), 0);
    }
    await page.getByRole('combobox', { name: 'Organization' }).click();
    await page.getByRole('option', { name: XSS }).waitFor();
    await page.keyboard.press('Escape');
    assert.equal(await page.evaluate('window.__xss'), undefined);
    assert.deepEqual(problems, []);
  });

  test("actions follow the caller's permissions: a role grants only what its maker holds", async () => {
    const maker = await t.userWith(['role:list', 'role:create', 'permission:list', 'user:list']);
    const own = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const ownProblems = watchProblems(own);
    await signIn(own, `${base}/admin/roles`, maker.username, 'password-1');
    await own.getByRole('cell', { name: `role-${maker.username}`, exact: true }).waitFor();
    assert.equal(await own.getByRole('button', { name: /^(Edit|Delete) / }).count(), 0);
    assert.equal(await own.getByRole('link', { name: 'Organizations', exact: true }).count(), 0);
    await own.getByRole('button', { name: 'Create role' }).click();
    const matrix = own.getByRole('dialog');
    assert.equal(await matrix.getByRole('checkbox', { name: 'List users' }).isEnabled(), true);
    assert.equal(await matrix.getByRole('checkbox', { name: 'Delete users' }).isEnabled(), false);
    // The module's checkbox sets only what the maker may grant, so it stays part checked.
    await matrix.getByRole('checkbox', { name: 'All of Users' }).click();
    assert.equal(await matrix.getByRole('checkbox', { name: 'List users' }).isChecked(), true);
    await field(matrix as unknown as Page, 'Name').fill('listers');
    await matrix.getByRole('button', { name: 'Create role' }).click();
    await own.getByRole('cell', { name: 'listers', exact: true }).waitFor();
    assert.deepEqual((await roleNamed('listers')).permissions, ['user:list']);
    assert.deepEqual(ownProblems, []);
    await own.close();
  });

  test('with an organization chosen, the navigation and pages follow the roles held in it', async () => {
    const member = await t.userWith([]);
    const delta = await api('POST', '/api/organizations', { name: 'Delta' });
    const epsilon = await api('POST', '/api/organizations', { name: 'Epsilon' });
    const viewer = await api('POST', '/api/roles', {
      name: 'delta-viewer',
      org_id: delta.id,
      permissions: ['role:list', 'audit_log:list'],
    });
    await api('PUT', `/api/organizations/${delta.id}/members`, { user_id: member.id, role_ids: [viewer.id] });
    await api('PUT', `/api/organizations/${epsilon.id}/members`, { user_id: member.id, role_ids: [] });
    const own = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const ownProblems = watchProblems(own);
    await signIn(own, `${base}/admin/`, member.username, 'password-1');
    const nav = own.getByRole('navigation', { name: 'Main' });
    const links = async () => (await nav.getByRole('link').allInnerTexts()).sort();
    assert.deepEqual(await links(), ['Overview', 'Profile']);

    await choose(own.locator('header'), 'Organization', 'Delta');
    await nav.getByRole('link', { name: 'Roles', exact: true }).waitFor();
    assert.deepEqual(await links(), ['Audit log', 'Overview', 'Profile', 'Roles']);
    await nav.getByRole('link', { name: 'Roles', exact: true }).click();
    await own.getByRole('cell', { name: 'delta-viewer', exact: true }).waitFor();
    assert.equal(await own.getByRole('button', { name: 'Create role' }).count(), 0, 'role:create is not held');

    await choose(own.locator('header'), 'Organization', 'Epsilon');
    await own.getByRole('heading', { name: 'No access', level: 2 }).waitFor();
    assert.deepEqual(await links(), ['Overview', 'Profile']);
    await choose(own.locator('header'), 'Organization', 'All');
    await nav.getByRole('link', { name: 'Roles', exact: true }).waitFor({ state: 'detached' });
    assert.deepEqual(await links(), ['Overview', 'Profile']);
    assert.deepEqual(ownProblems, []);
    await own.close();
  });

  test('phone width: no page scrolls sideways', async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    for (const [path, heading] of [
      ['roles', 'Roles'],
      ['organizations', 'Organizations'],
      ['permissions', 'Permissions'],
    ]) {
      await open(path!, heading!);
      const width = await page.evaluate<number>('document.documentElement.scrollWidth');
      const wide = await page.evaluate(
        `[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > 376).slice(0, 8).map((e) => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))`,
      );
      assert.ok(width <= 375, `${path}: ${width}px wide ${JSON.stringify(wide)}`);
    }
    await page.getByRole('button', { name: 'Toggle navigation' }).click();
    await page.getByRole('dialog').getByRole('link', { name: 'Roles' }).click();
    await page.getByRole('button', { name: 'Create role' }).click();
    const width = await page.evaluate<number>('document.documentElement.scrollWidth');
    assert.ok(width <= 375, `role dialog: ${width}px wide`);
    assert.deepEqual(problems, []);
  });
});
