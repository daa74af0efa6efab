import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { RESET_MAILS_PER_ADDRESS } from '../routers/auth/password-reset.ts';
import { lanes, startConsole, type TestConsole } from './support/harness.ts';
import { until } from './support/engine-node.ts';
import { sleep } from './support/identity.ts';
import { startMailServer, type MailServer } from './support/mail-server.ts';

const ROOT = 'https://console.example.com';
const PASSWORD = 'user-password-1';
/** A local server without AUTH; the password is required by PUT but never used. */
const smtpBody = (port: number) => ({
  host: '127.0.0.1',
  port,
  username: '',
  password: 'unused',
  from_email: 'console@example.com',
  use_tls: false,
});

for (const lane of lanes()) {
  describe(`system emails [${lane.name}]`, () => {
    let t: TestConsole;
    let admin: string;
    let mail: MailServer;
    let n = 0;

    const createUser = async (extra: Record<string, unknown> = {}) => {
      const name = `mailuser${++n}`;
      const res = await t.request('POST', '/api/users', {
        token: admin,
        body: { username: name, email: `${name}@example.com`, password: PASSWORD, ...extra },
      });
      assert.equal(res.status, 201, res.text);
      return res.body.data as { id: string; username: string; email: string };
    };
    /** Runs `action` and answers the first mail that arrives after it. */
    const mailAfter = async (action: () => Promise<unknown>) => {
      const before = mail.received.length;
      await action();
      return mail.next(before);
    };
    const setSettings = (body: Record<string, string>) =>
      t.request('PUT', '/api/system/settings', { token: admin, body });
    const resetRequest = (email: string, headers?: Record<string, string>) =>
      t.request('POST', '/api/auth/password-reset/request', { body: { email }, headers });
    const confirm = (token: string, password: string) =>
      t.request('POST', '/api/auth/password-reset/confirm', { body: { token, password } });
    const login = (body: Record<string, string>) => t.request('POST', '/api/auth/login', { body });
    const tokenIn = (text: string) => /token=([\w%-]+)/.exec(text)?.[1] ?? assert.fail(`no token in ${text}`);
    const codeIn = (text: string) => /\b(\d{6})\b/.exec(text)?.[1] ?? assert.fail(`no code in ${text}`);

    before(async () => {
      mail = await startMailServer('plain');
      t = await startConsole(lane, { global: { encrypt_key: 'k'.repeat(32) }, server: { root_url: ROOT } });
      admin = await t.login();
      const res = await t.request('PUT', '/api/system/settings/smtp', {
        token: admin,
        body: smtpBody(mail.port),
      });
      assert.equal(res.status, 200, res.text);
    });
    after(async () => {
      await t.close();
      await mail.close();
    });

    test('password reset: same answer for unknown addresses; single-use link under root_url; the new password works', async () => {
      const user = await createUser();
      const unknown = await resetRequest('nobody@example.com');
      const received = await mailAfter(async () => {
        const known = await resetRequest(user.email);
        assert.equal(known.status, unknown.status);
        assert.deepEqual(known.body.data, unknown.body.data);
      });
      assert.deepEqual(received.to, [user.email]);
      assert.match(received.subject, /reset your password/);
      // The web console's page, the token in the fragment (never sent to a server).
      assert.ok(received.text.includes(`${ROOT}/admin/reset-password#token=`), received.text);
      assert.match(received.html, /<a href="https:\/\/console\.example\.com\/admin\/reset-password#token=/);
      const token = decodeURIComponent(tokenIn(received.text));

      const short = await confirm(token, 'x');
      assert.equal(short.status, 400);
      assert.match(short.body.err, /^password: /);
      assert.equal((await confirm(token, 'brand-new-password')).status, 200);
      assert.equal((await login({ username: user.username, password: PASSWORD })).status, 401);
      assert.equal((await login({ username: user.username, password: 'brand-new-password' })).status, 200);
      const reused = await confirm(token, 'another-password-2');
      assert.equal(reused.status, 400);
      assert.equal(reused.body.code, 'E4001');
      assert.equal((await confirm('made-up-token', 'another-password-2')).status, 400);
      const audit = await t.request('GET', `/api/audit-logs?action=password_reset&user_id=${user.id}`, {
        token: admin,
      });
      assert.equal(audit.body.data.length, 1);
    });

    test('an expired reset token is refused; a newer link replaces an older one', async () => {
      const user = await createUser();
      const first = decodeURIComponent(tokenIn((await mailAfter(() => resetRequest(user.email))).text));
      const second = decodeURIComponent(tokenIn((await mailAfter(() => resetRequest(user.email))).text));
      assert.equal((await confirm(first, 'brand-new-password')).status, 400, 'the older link ended');
      await t.c.db
        .knex(t.c.db.t.userTokens)
        .where({ user_id: user.id })
        .update({ expires_at: t.c.db.dialect.toDbTime(new Date(Date.now() - 1000)) });
      const expired = await confirm(second, 'brand-new-password');
      assert.equal(expired.status, 400);
      assert.equal(expired.body.code, 'E4001');
    });

    test('MFA by email: challenge, mailed code, single use, wrong codes refused', async () => {
      const user = await createUser({ mfa_enabled: true });
      let challenge: any;
      const received = await mailAfter(async () => {
        challenge = await login({ username: user.username, password: PASSWORD });
      });
      assert.equal(challenge.status, 200);
      assert.equal(challenge.body.data.mfa_required, true);
      assert.equal(challenge.body.data.token, undefined);
      assert.deepEqual(received.to, [user.email]);
      const code = codeIn(received.text);
      const wrong = await login({
        mfa_token: challenge.body.data.mfa_token,
        mfa_code: code === '000000' ? '111111' : '000000',
      });
      assert.equal(wrong.status, 401);
      assert.equal(wrong.body.code, 'E4011');
      const done = await login({ mfa_token: challenge.body.data.mfa_token, mfa_code: code });
      assert.equal(done.status, 200, done.text);
      const me = await t.request('GET', '/api/auth/me', { token: done.body.data.token });
      assert.equal(me.body.data.username, user.username);
      assert.equal(
        (await login({ mfa_token: challenge.body.data.mfa_token, mfa_code: code })).status,
        401,
        'a code works once',
      );
    });

    test('MFA: the attempt limit ends the challenge even for the right code; an expired code is refused', async () => {
      const user = await createUser({ mfa_enabled: true });
      let challenge: any;
      const code = codeIn(
        (await mailAfter(async () => (challenge = await login({ username: user.username, password: PASSWORD })))).text,
      );
      const wrongCode = code === '000000' ? '111111' : '000000';
      for (let i = 0; i < 5; i++)
        assert.equal((await login({ mfa_token: challenge.body.data.mfa_token, mfa_code: wrongCode })).status, 401);
      assert.equal((await login({ mfa_token: challenge.body.data.mfa_token, mfa_code: code })).status, 401);

      const code2 = codeIn(
        (await mailAfter(async () => (challenge = await login({ username: user.username, password: PASSWORD })))).text,
      );
      await t.c.db
        .knex(t.c.db.t.userTokens)
        .where({ user_id: user.id, purpose: 'mfa' })
        .update({ expires_at: t.c.db.dialect.toDbTime(new Date(Date.now() - 1000)) });
      assert.equal((await login({ mfa_token: challenge.body.data.mfa_token, mfa_code: code2 })).status, 401);
    });

    test('password reset: the answer does not wait for the lookup or the mail', async () => {
      const user = await createUser();
      const { client } = t.c.db.knex as unknown as { client: { acquireConnection: (...a: unknown[]) => unknown } };
      const acquire = client.acquireConnection;
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      // Every query waits until the answer is in.
      client.acquireConnection = function (this: unknown, ...args: unknown[]) {
        return held.then(() => acquire.apply(this, args));
      };
      const before = mail.received.length;
      try {
        const answer = await Promise.race([resetRequest(user.email), sleep(3000).then(() => undefined)]);
        assert.equal(answer?.status, 200, 'answered while the database was held');
      } finally {
        client.acquireConnection = acquire;
        release();
      }
      assert.deepEqual((await mail.next(before)).to, [user.email], 'the mail goes out afterwards');
    });

    test('password reset: at most RESET_MAILS_PER_ADDRESS mails per address in a window', async () => {
      const user = await createUser();
      const other = await createUser();
      const before = mail.received.length;
      const to = (address: string) => mail.received.slice(before).filter((m) => m.to.includes(address)).length;
      const answers = await Promise.all([
        ...Array.from({ length: 8 }, () => resetRequest(user.email.toUpperCase())),
        resetRequest(other.email),
      ]);
      assert.ok(answers.every((a) => a.status === 200));
      await until(() => to(other.email) === 1 && to(user.email) >= RESET_MAILS_PER_ADDRESS, 10_000);
      await sleep(300);
      await t.c.services.mailer.idle();
      assert.equal(to(user.email), RESET_MAILS_PER_ADDRESS);
    });

    test('welcome email only when welcome_email_enabled; account-locked email when the lockout starts', async () => {
      const before = mail.received.length;
      const quiet = await createUser();
      assert.equal((await setSettings({ welcome_email_enabled: 'true', login_failure_attempts: '2' })).status, 200);
      try {
        const welcome = await mailAfter(() => createUser());
        assert.match(welcome.subject, /Welcome to Console/);
        assert.ok(welcome.text.includes(ROOT));
        assert.equal(
          mail.received.slice(before).some((m) => m.to.includes(quiet.email)),
          false,
        );

        const locked = await mailAfter(async () => {
          for (let i = 0; i < 2; i++)
            assert.equal((await login({ username: quiet.username, password: 'wrong-password' })).status, 401);
        });
        assert.deepEqual(locked.to, [quiet.email]);
        assert.match(locked.subject, /locked/);
      } finally {
        await setSettings({ welcome_email_enabled: 'false', login_failure_attempts: '5' });
      }
      await t.c.services.mailer.idle();
      const metrics = await t.c.metrics.registry.getSingleMetricAsString('mail_sent_total');
      assert.match(metrics, /mail_sent_total\{template="welcome",result="sent"\} 1/);
    });

    test('zh-CN: Accept-Language picks the language of errors; emails follow the locale stored at login', async () => {
      const user = await createUser();
      const zh = await t.request('POST', '/api/auth/login', {
        body: { username: user.username, password: 'wrong-password' },
        headers: { 'accept-language': 'zh' },
      });
      assert.equal(zh.body.code, 'E4011');
      assert.equal(zh.body.err, '用户名或密码错误');
      const fr = await t.request('POST', '/api/auth/login', {
        body: { username: user.username, password: 'wrong-password' },
        headers: { 'accept-language': 'fr-FR, zh-TW;q=0.5' },
      });
      assert.equal(fr.body.err, '用户名或密码错误', 'zh-TW falls back to zh-CN by language');
      const en = await t.request('POST', '/api/auth/login', {
        body: { username: user.username, password: 'wrong-password' },
        headers: { 'accept-language': 'fr' },
      });
      assert.equal(en.body.err, 'invalid username or password');
      assert.equal(
        (
          await t.request('POST', '/api/auth/login', {
            body: { username: user.username, password: PASSWORD },
            headers: { 'accept-language': 'zh-CN' },
          })
        ).status,
        200,
      );
      // Sent without any Accept-Language: the stored locale decides.
      const received = await mailAfter(() => resetRequest(user.email));
      assert.match(received.subject, /重置您的密码/);
      assert.match(received.text, /分钟内打开以下链接/);
    });

    test('a failed send is logged and counted, and never fails the request', async () => {
      await t.request('PUT', '/api/system/settings/smtp', { token: admin, body: smtpBody(1) });
      try {
        const user = await createUser();
        assert.equal((await resetRequest(user.email)).status, 200);
        await t.c.services.mailer.idle();
        const metrics = await t.c.metrics.registry.getSingleMetricAsString('mail_sent_total');
        assert.match(metrics, /mail_sent_total\{template="password_reset",result="failed"\} 1/);
      } finally {
        await t.request('PUT', '/api/system/settings/smtp', { token: admin, body: smtpBody(mail.port) });
      }
    });
  });
}

for (const lane of lanes()) {
  describe(`mail templates from mail.template_path [${lane.name}]`, () => {
    test('a file replaces one part of a template; the rest stays built in', async () => {
      const folder = mkdtempSync(join(tmpdir(), 'console-templates-'));
      writeFileSync(join(folder, 'welcome.subject'), 'Hi {username}, from {service}\n');
      writeFileSync(join(folder, 'welcome.html'), '<p>Start at <a href="{link}">{service}</a></p>');
      const mail = await startMailServer('plain');
      const t = await startConsole(lane, {
        global: { encrypt_key: 'k'.repeat(32) },
        server: { root_url: ROOT },
        mail: { template_path: folder },
      });
      try {
        const admin = await t.login();
        await t.request('PUT', '/api/system/settings/smtp', { token: admin, body: smtpBody(mail.port) });
        await t.request('PUT', '/api/system/settings', { token: admin, body: { welcome_email_enabled: 'true' } });
        await t.request('POST', '/api/users', {
          token: admin,
          body: { username: 'templated', email: 'templated@example.com', password: PASSWORD },
        });
        const received = await mail.next(0);
        assert.equal(received.subject, 'Hi templated, from Console');
        assert.match(received.html, /<a href="https:\/\/console\.example\.com\/">Console<\/a>/);
        assert.match(received.text, /An account was created for you/);
      } finally {
        await t.close();
        await mail.close();
      }
    });
  });
}
