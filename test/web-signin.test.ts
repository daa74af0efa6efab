import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { chromiumSkip, watchProblems } from './support/chromium.ts';
import { until } from './support/engine-node.ts';
import type { TestConsole } from './support/harness.ts';
import { startMailServer, type MailServer } from './support/mail-server.ts';
import { freePort, startMockProvider, type MockProvider } from './support/oauth-providers.ts';
import { assertAccessible, field, signIn, startWebConsole, type WebConsole } from './support/web-ui.ts';

const CLIENT = { id: 'web-client', secret: 'web-client-secret' };
const PASSWORD = 'password-1';
/** A session token: a JWT, three base64url parts, its header starting `{"` (eyJ). A reset token is one part. */
const SESSION_TOKEN = /eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]+/;
/** A session token or a reset link's token: neither may reach any address the browser asks a server for. */
const SECRET_IN_URL = new RegExp(`${SESSION_TOKEN.source}|token=`);
/** The OAuth state is a signed token of the service's own, made to travel through the provider. */
const withoutState = (url: string) => url.replace(/([?&])state=[^&]*/g, '$1state=');

// Sign-in, its MFA step, OAuth through the UI's callback route, the reset mail, Profile and the users dialog's
// account actions, on SQLite (the API under them is tested on every lane).
const ICON_URL = 'https://icons.example.test/mock.svg';
const ICON = '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><rect width="16" height="16"/></svg>';

describe('web console: signing in and the account', { skip: chromiumSkip }, () => {
  let t: TestConsole;
  let mail: MailServer;
  let mock: MockProvider;
  let browser: Browser;
  let base: string;
  let admin: string;
  /** Every address the pages asked a server for, and every one they showed. */
  const requested: string[] = [];
  const shown: string[] = [];

  let web: WebConsole;
  before(async () => {
    mail = await startMailServer('plain');
    mock = await startMockProvider([CLIENT]);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    ({ t, browser } = web = await startWebConsole({
      global: { encrypt_key: 'k'.repeat(32) },
      server: { port, root_url: base },
      oauth: {
        enabled: true,
        providers: [
          {
            name: 'mock',
            display_name: 'Mock',
            icon_url: ICON_URL,
            client_id: CLIENT.id,
            client_secret: CLIENT.secret,
            ...mock.urls,
            redirect_url: `${base}/admin/oauth/mock/callback`,
            auto_create_user: true,
          },
        ],
      },
    }));
    admin = await t.login();
    const smtp = await t.request('PUT', '/api/system/settings/smtp', {
      token: admin,
      body: {
        host: '127.0.0.1',
        port: mail.port,
        username: '',
        password: 'unused',
        from_email: 'c@example.test',
        use_tls: false,
      },
    });
    assert.equal(smtp.status, 200, smtp.text);
  });
  after(async () => {
    await web?.close();
    await mail?.close();
    await mock?.close();
    assert.deepEqual(
      requested.filter((u) => SECRET_IN_URL.test(withoutState(u))),
      [],
      'no request carried a token',
    );
    // The reset link itself shows its token until its page takes it out (checked there).
    assert.deepEqual(
      shown.filter((u) => SESSION_TOKEN.test(withoutState(u))),
      [],
      'no address showed the session token',
    );
  });

  const newPage = async (expected = /$^/, width = 1280) => {
    const page = await browser.newPage({ viewport: { width, height: 800 } });
    page.on('request', (r) => requested.push(r.url()));
    page.on('framenavigated', (f) => shown.push(f.url()));
    // The provider's icon is on another site; this page answers for it.
    await page.route(ICON_URL, (route) => route.fulfill({ contentType: 'image/svg+xml', body: ICON }));
    // A refused sign-in answers 401 or 400, which the browser reports; only those a test expects are let through.
    const problems = watchProblems(page);
    return { page, problems: () => problems.filter((p) => !expected.test(p)) };
  };
  const createUser = async (extra: Record<string, unknown> = {}) => {
    const username = `web${Math.random().toString(36).slice(2, 8)}`;
    const res = await t.request('POST', '/api/users', {
      token: admin,
      body: { username, email: `${username}@example.test`, password: PASSWORD, ...extra },
    });
    assert.equal(res.status, 201, res.text);
    return res.body.data as { id: string; username: string; email: string };
  };
  const userById = async (id: string) => (await t.request('GET', `/api/users/${id}`, { token: admin })).body.data;
  /** Runs `action` and answers the 6-digit code of the first mail after it. */
  const codeAfter = async (action: () => Promise<unknown>) => {
    const before = mail.received.length;
    await action();
    const received = await mail.next(before);
    return /\b(\d{6})\b/.exec(received.text)?.[1] ?? assert.fail(received.text);
  };
  const passwordForm = async (page: Page, username: string, password: string) => {
    await field(page, 'Username').fill(username);
    await field(page, 'Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  };
  const welcome = (page: Page) => page.getByRole('heading', { name: /Welcome/ }).waitFor();
  const signOut = async (page: Page) => {
    await page.getByRole('button', { name: /User menu/ }).click();
    await page.getByRole('menuitem', { name: 'Sign out' }).click();
    await page.getByText('You are signed out.').waitFor();
  };

  test('MFA: the mailed code completes the sign-in; a wrong code is said', async () => {
    const user = await createUser({ mfa_enabled: true });
    const { page, problems } = await newPage(/40[01]/);
    await page.goto(`${base}/admin/`);
    const code = await codeAfter(() => passwordForm(page, user.username, PASSWORD));
    await field(page, 'Verification code').waitFor();
    await assertAccessible(page, 'MFA step');
    await field(page, 'Verification code').fill(code === '000000' ? '111111' : '000000');
    await page.getByRole('button', { name: 'Verify' }).click();
    assert.match(await page.getByRole('alert').innerText(), /wrong code/);
    await field(page, 'Verification code').fill(code);
    await page.getByRole('button', { name: 'Verify' }).click();
    await welcome(page);
    assert.deepEqual(problems(), []);
    await page.close();
  });

  test('a locked and a disabled account each show their message', async () => {
    const locked = await createUser();
    const disabled = await createUser();
    for (let i = 0; i < 5; i++)
      await t.request('POST', '/api/auth/login', { body: { username: locked.username, password: 'wrong-one' } });
    await t.request('PUT', `/api/users/${disabled.id}`, { token: admin, body: { status: 'disabled' } });
    const { page, problems } = await newPage(/40[13]/);
    await page.goto(`${base}/admin/signin`);
    await passwordForm(page, locked.username, PASSWORD);
    // During a lock the service gives every password a wrong one's answer (it does not reveal the lock; the
    // account's owner is mailed about it).
    assert.match(await page.getByRole('alert').innerText(), /^Invalid username or password/);
    await passwordForm(page, disabled.username, PASSWORD);
    await page
      .getByRole('alert')
      .getByText(/^Account is disabled/)
      .waitFor();
    await assertAccessible(page, 'sign-in with a refusal');
    assert.deepEqual(problems(), []);

    // An administrator lifts the lock, sets a password and turns MFA on from the users dialog.
    await signIn(page, `${base}/admin/users`);
    await page.getByRole('searchbox', { name: 'Search' }).fill(locked.username);
    await page.getByRole('button', { name: `Edit ${locked.username}` }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('Locked after failed sign-ins.').waitFor();
    await assertAccessible(page, 'edit user dialog');
    await dialog.getByRole('button', { name: 'Unlock' }).click();
    await dialog.getByRole('button', { name: 'Unlock' }).waitFor({ state: 'detached' });
    assert.equal((await userById(locked.id)).status, 'active');
    await field(dialog as unknown as Page, 'New password').fill('set-by-admin-1');
    await dialog.getByRole('button', { name: 'Set password' }).click();
    await page.getByText('Password set.').waitFor();
    assert.equal(
      (await t.request('POST', '/api/auth/login', { body: { username: locked.username, password: 'set-by-admin-1' } }))
        .status,
      200,
    );
    await dialog.getByRole('switch', { name: /MFA/ }).check();
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.waitFor({ state: 'detached' });
    assert.equal((await userById(locked.id)).mfa_enabled, true);
    await page.close();
  });

  test('a session ended elsewhere returns to sign-in saying so', async () => {
    const { page, problems } = await newPage(/401/);
    await signIn(page, `${base}/admin/`);
    const token = await page.evaluate<string>(`sessionStorage.getItem('console.token')`);
    assert.equal((await t.request('POST', '/api/auth/logout', { token })).status, 200);
    await page.getByRole('link', { name: 'Users' }).click();
    await page.getByText('Your session has ended. Sign in again.').waitFor();
    assert.equal(await page.evaluate('sessionStorage.length'), 0);
    assert.deepEqual(problems(), []);
    await page.close();
  });

  test('OAuth: the provider button signs in through the UI callback route; an MFA account passes its code step', async () => {
    mock.user = { sub: 'web-oauth-1', username: 'weboauth', email: 'weboauth@example.test', email_verified: true };
    const { page, problems } = await newPage(/401/);
    await page.goto(`${base}/admin/signin`);
    await assertAccessible(page, 'sign-in page with a provider');
    // Its icon, from another site over https, is let through by the page's CSP (no violation reported).
    const icon = page.getByRole('link', { name: 'Sign in with Mock' }).locator('img');
    assert.equal(await icon.getAttribute('src'), ICON_URL);
    await icon.evaluate((img: { decode(): Promise<void> }) => img.decode());
    assert.equal(await icon.evaluate((img: { naturalWidth: number }) => img.naturalWidth), 16);
    assert.deepEqual(problems(), []);
    await page.getByRole('link', { name: 'Sign in with Mock' }).click();
    await welcome(page);
    assert.match(new URL(page.url()).pathname, /^\/admin\/?$/);
    const listed = await t.request('GET', '/api/users?search=weboauth', { token: admin });
    const user = listed.body.data[0];
    assert.equal(user.email, 'weboauth@example.test');
    await signOut(page);

    await t.request('PUT', `/api/users/${user.id}`, { token: admin, body: { mfa_enabled: true } });
    const code = await codeAfter(async () => {
      await page.getByRole('link', { name: 'Sign in with Mock' }).click();
      await field(page, 'Verification code').waitFor();
    });
    assert.match(new URL(page.url()).pathname, /\/admin\/signin$/);
    await field(page, 'Verification code').fill(code);
    await page.getByRole('button', { name: 'Verify' }).click();
    await welcome(page);
    assert.deepEqual(problems(), []);
    await signOut(page);

    // A refusal at the provider is said on the callback page; opened without the provider's answer, it says so.
    mock.denyNext('access_denied');
    await page.getByRole('link', { name: 'Sign in with Mock' }).click();
    await page.getByRole('heading', { name: 'Signing in' }).waitFor();
    await page.getByRole('alert').waitFor();
    assert.equal(await page.evaluate('sessionStorage.length'), 0);
    await page.goto(`${base}/admin/oauth/mock/callback`);
    await page
      .getByRole('alert')
      .getByText(/no answer/)
      .waitFor();
    await assertAccessible(page, 'OAuth callback page');
    await page.close();
  });

  test('forgot password: request, the mailed link opens the reset page, the new password signs in', async () => {
    const user = await createUser();
    const { page, problems } = await newPage();
    await page.goto(`${base}/admin/signin`);
    await page.getByRole('link', { name: 'Forgot password?' }).click();
    await field(page, 'Email').fill(user.email);
    await assertAccessible(page, 'forgot password page');
    const before = mail.received.length;
    await page.getByRole('button', { name: 'Send reset link' }).click();
    await page
      .getByRole('status')
      .getByText(/reset link is on its way/)
      .waitFor();
    const link = /(http\S+reset-password#token=\S+)/.exec((await mail.next(before)).text)?.[1];
    assert.ok(link?.startsWith(`${base}/admin/reset-password#token=`), link);

    await page.goto(link!);
    await page.getByRole('heading', { name: 'Set a new password' }).waitFor();
    assert.equal(new URL(page.url()).hash, '', 'the token left the address bar');
    await assertAccessible(page, 'reset password page');
    await field(page, 'New password').fill('reset-in-ui-1');
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.getByText('Your password was changed. Sign in with the new one.').waitFor();
    await passwordForm(page, user.username, 'reset-in-ui-1');
    await welcome(page);
    assert.deepEqual(problems(), []);
    await page.close();
  });

  test('Profile: details, MFA on and off with the password, then a password change ends the session', async () => {
    const user = await createUser();
    const { page, problems } = await newPage(/400/);
    await signIn(page, `${base}/admin/profile`, user.username, PASSWORD);
    await field(page, 'Full name').fill('Profile Person');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.').waitFor();
    assert.equal((await userById(user.id)).full_name, 'Profile Person');
    await assertAccessible(page, 'profile page');

    const mfa = page.getByRole('switch', { name: /Email me a code/ });
    await mfa.click();
    const dialog = page.getByRole('dialog', { name: 'Turn on MFA' });
    await field(dialog as unknown as Page, 'Current password').fill('not-it');
    await dialog.getByRole('button', { name: 'Turn on MFA' }).click();
    await dialog
      .getByRole('alert')
      .getByText(/current password is needed/)
      .waitFor();
    await assertAccessible(page, 'MFA dialog');
    await field(dialog as unknown as Page, 'Current password').fill(PASSWORD);
    await dialog.getByRole('button', { name: 'Turn on MFA' }).click();
    await dialog.waitFor({ state: 'detached' });
    assert.equal((await userById(user.id)).mfa_enabled, true);
    await mfa.click();
    await field(page.getByRole('dialog', { name: 'Turn off MFA' }) as unknown as Page, 'Current password').fill(
      PASSWORD,
    );
    await page.getByRole('dialog').getByRole('button', { name: 'Turn off MFA' }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    assert.equal((await userById(user.id)).mfa_enabled, false);
    // The switch follows the profile read again after the change, a moment after the dialog closed.
    assert.ok(await until(async () => !(await mfa.isChecked()), 5_000), 'the switch shows MFA off');

    await field(page, 'Current password').fill(PASSWORD);
    await field(page, 'New password').fill('changed-in-ui-1');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByText('Your password was changed. Sign in with the new one.').waitFor();
    await passwordForm(page, user.username, 'changed-in-ui-1');
    await page.getByRole('heading', { name: 'Profile' }).waitFor();
    assert.deepEqual(problems(), []);
    await page.close();
  });

  test('a generated password still in use is pointed out until it is changed', async () => {
    const user = await createUser();
    // As the first start leaves its administrator (routers/auth/bootstrap.ts).
    await t.c.db.knex(t.c.db.t.users).where({ id: user.id }).update({ password_changed_at: null });
    const { page, problems } = await newPage();
    await signIn(page, `${base}/admin/`, user.username, PASSWORD);
    await page.getByText('You signed in with the password generated at the first start.').waitFor();
    await assertAccessible(page, 'overview with the notice');
    await page.getByRole('link', { name: 'Change it in Profile' }).click();
    await page.getByRole('heading', { name: 'Profile' }).waitFor();
    await field(page, 'Current password').fill(PASSWORD);
    await field(page, 'New password').fill('not-generated-1');
    await page.getByRole('button', { name: 'Change password' }).click();
    await passwordForm(page, user.username, 'not-generated-1');
    await page.getByRole('heading', { name: 'Profile' }).waitFor();
    assert.equal(await page.getByText(/password generated at the first start/).count(), 0);
    assert.deepEqual(problems(), []);
    await page.close();
  });

  test('phone width: none of these pages scrolls sideways', async () => {
    const { page, problems } = await newPage(undefined, 375);
    const wide = () => page.evaluate<number>('document.documentElement.scrollWidth');
    for (const path of ['signin', 'forgot-password', 'reset-password#token=x']) {
      await page.goto(`${base}/admin/${path}`);
      await page.locator('main h1').waitFor();
      assert.ok((await wide()) <= 375, `${path}: ${await wide()}px wide`);
    }
    await signIn(page, `${base}/admin/profile`);
    await page.getByRole('heading', { name: 'Profile' }).waitFor();
    assert.ok((await wide()) <= 375, `profile: ${await wide()}px wide`);
    assert.deepEqual(problems(), []);
    await page.close();
  });
});
