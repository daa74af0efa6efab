import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { captureLogs, lanes, startConsole, type TestConsole } from './support/harness.ts';
import { startMailServer, type MailServer } from './support/mail-server.ts';

const SECRET = 'smtp-Secret-pass-42';
const KEY = 'k'.repeat(32);

/** A port nothing listens on: bound, noted and released. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

const settings = (port: number, over: Record<string, unknown> = {}) => ({
  host: '127.0.0.1',
  port,
  username: 'mailer',
  password: SECRET,
  from_email: 'console@example.com',
  from_name: 'Console',
  use_tls: false,
  use_ssl: false,
  ...over,
});

for (const lane of lanes()) {
  describe(`smtp settings [${lane.name}]`, () => {
    let t: TestConsole;
    let admin: string;
    const logs = captureLogs('trace');
    const servers: MailServer[] = [];
    const mailServer = async (...args: Parameters<typeof startMailServer>) => {
      const s = await startMailServer(...args);
      servers.push(s);
      return s;
    };
    const put = (body: unknown, token = admin) => t.request('PUT', '/api/system/settings/smtp', { token, body });
    const sendTest = (to = 'someone@example.com') =>
      t.request('POST', '/api/system/settings/smtp/test', {
        token: admin,
        body: { to, subject: 'Hello', body: 'test body' },
      });

    before(async () => {
      // SQLite runs without a key (one is generated beside the database); shared databases need one configured.
      t = await startConsole(lane, lane.name === 'sqlite' ? {} : { global: { encrypt_key: KEY } }, {
        logger: logs.logger,
        mailTls: { rejectUnauthorized: false },
      });
      admin = await t.login();
    });
    after(async () => {
      await t.close();
      for (const s of servers) await s.close();
    });

    test('only an admin reads or writes them; GET before any PUT answers the defaults', async () => {
      const viewer = await t.userWith(['system:settings:view', 'system:settings:update']);
      assert.equal((await t.request('GET', '/api/system/settings/smtp', { token: viewer.token })).status, 403);
      assert.equal((await put(settings(25), viewer.token)).status, 403);
      const res = await t.request('GET', '/api/system/settings/smtp', { token: admin });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.use_tls, true);
      assert.equal(res.body.data.use_ssl, false);
      assert.equal('password' in res.body.data, false);
    });

    test('PUT validates: password required, use_tls and use_ssl not both, a valid sender', async () => {
      const { password: _omit, ...noPassword } = settings(25);
      const missing = await put(noPassword);
      assert.equal(missing.status, 400);
      assert.match(missing.body.err, /password/);
      const both = await put(settings(25, { use_tls: true, use_ssl: true }));
      assert.equal(both.status, 400);
      assert.equal(both.body.code, 'E4001');
      assert.match(both.body.err, /use_ssl/);
      assert.equal((await put(settings(25, { from_email: 'nope' }))).status, 400);
    });

    test('plain with AUTH: the server receives the stored password; it is never answered, logged or audited', async () => {
      const server = await mailServer('plain', { username: 'mailer', password: SECRET });
      const saved = await put(settings(server.port));
      assert.equal(saved.status, 200);
      assert.equal(saved.body.data.host, '127.0.0.1');
      const read = await t.request('GET', '/api/system/settings/smtp', { token: admin });
      assert.equal(read.body.data.port, server.port);
      const sent = await sendTest('dest@example.com');
      assert.equal(sent.status, 200, sent.text);
      const mail = await server.next(0);
      assert.deepEqual(mail.to, ['dest@example.com']);
      assert.equal(mail.subject, 'Hello');
      assert.match(mail.text, /test body/);
      assert.deepEqual(server.logins.at(-1), { username: 'mailer', password: SECRET });

      const stored = await t.c.db.knex(t.c.db.t.settings).where({ key: 'smtp' }).first('value');
      assert.ok(stored);
      assert.equal(String(stored.value).includes(SECRET), false, 'stored encrypted');
      const audit = await t.request('GET', '/api/audit-logs?resource_type=smtp', { token: admin });
      assert.ok(audit.body.data.length >= 1);
      for (const text of [saved.text, read.text, sent.text, audit.text, JSON.stringify(logs.lines)])
        assert.equal(text.includes(SECRET), false);
      if (lane.name === 'sqlite') {
        assert.ok(
          existsSync(join(dirname(t.database.path as string), 'console.key')),
          'key generated beside the database',
        );
        assert.ok(
          logs.lines.some((l) => String(l.msg).includes('global.encrypt_key')),
          'a warning says the key was generated',
        );
      }
    });

    test('STARTTLS (use_tls) upgrades the session before sending', async () => {
      const server = await mailServer('starttls', { username: 'mailer', password: SECRET });
      assert.equal((await put(settings(server.port, { use_tls: true }))).status, 200);
      const sent = await sendTest();
      assert.equal(sent.status, 200, sent.text);
      assert.equal((await server.next(0)).secure, true);
    });

    test('implicit TLS (use_ssl) and no AUTH when the username is empty', async () => {
      const server = await mailServer('implicit');
      assert.equal((await put(settings(server.port, { use_ssl: true, username: '' }))).status, 200);
      const sent = await sendTest();
      assert.equal(sent.status, 200, sent.text);
      assert.equal((await server.next(0)).secure, true);
      assert.equal(server.logins.length, 0);
    });

    test('a wrong password answers 400 E4001 with a short reason', async () => {
      const server = await mailServer('plain', { username: 'mailer', password: 'other-password' });
      await put(settings(server.port));
      const res = await sendTest();
      assert.equal(res.status, 400);
      assert.equal(res.body.code, 'E4001');
      assert.match(res.body.err, /username or password/);
      assert.equal(res.text.includes(SECRET), false);
    });

    test('a TLS failure (implicit TLS against a plain server) answers 503 E5031', async () => {
      const server = await mailServer('plain');
      await put(settings(server.port, { use_ssl: true, username: '' }));
      const res = await sendTest();
      assert.equal(res.status, 503);
      assert.equal(res.body.code, 'E5031');
    });

    test('an unreachable host answers 503 E5031 without internals', async () => {
      await put(settings(await closedPort()));
      const res = await sendTest();
      assert.equal(res.status, 503);
      assert.equal(res.body.code, 'E5031');
      assert.doesNotMatch(res.body.err, /ECONN|127\.0\.0\.1|nodemailer|at /);
      assert.equal(JSON.stringify(logs.lines).includes(SECRET), false);
    });
  });

  if (lane.name !== 'sqlite') {
    describe(`smtp settings without global.encrypt_key [${lane.name}]`, () => {
      test('saving the password answers 400 E4001 naming global.encrypt_key; reading still works', async () => {
        const t = await startConsole(lane);
        try {
          const admin = await t.login();
          const res = await t.request('PUT', '/api/system/settings/smtp', { token: admin, body: settings(25) });
          assert.equal(res.status, 400);
          assert.equal(res.body.code, 'E4001');
          assert.match(res.body.err, /global\.encrypt_key/);
          assert.equal((await t.request('GET', '/api/system/settings/smtp', { token: admin })).status, 200);
        } finally {
          await t.close();
        }
      });
    });
  }
}
