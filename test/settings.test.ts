import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { lanes, startConsole, type TestConsole } from './support/harness.ts';

/** docs/decisions.md "Settings and audit": the foundation's keys (routers/settings/definitions.ts) and the task engine's (engine/settings.ts). */
const DEFAULTS = {
  session_idle_timeout_minutes: '1440',
  password_min_length: '8',
  login_failure_attempts: '5',
  login_failure_lockout_minutes: '10',
  welcome_email_enabled: 'false',
  audit_log_retention_days: '365',
  task_max_concurrent: '10',
  task_log_storage_backend: 'database',
  task_log_retention_days: '30',
};

for (const lane of lanes()) {
  describe(`settings [${lane.name}]`, () => {
    let t: TestConsole;
    let admin: string;
    const get = async () =>
      (await t.request('GET', '/api/system/settings', { token: admin })).body.data as Record<string, string>;
    const put = (body: unknown, token = admin) => t.request('PUT', '/api/system/settings', { token, body });

    before(async () => {
      t = await startConsole(lane);
      admin = await t.login();
    });
    after(async () => t.close());

    test('GET answers a flat map of strings with the documented defaults', async () => {
      const res = await t.request('GET', '/api/system/settings', { token: admin });
      assert.equal(res.status, 200);
      assert.equal(res.body.code, '0');
      const map = res.body.data as Record<string, unknown>;
      for (const [key, value] of Object.entries(map)) assert.equal(typeof value, 'string', key);
      for (const [key, value] of Object.entries(DEFAULTS)) assert.equal(map[key], value, key);
    });

    test('PUT of a partial map saves it and answers the whole updated map', async () => {
      const res = await put({ audit_log_retention_days: '90', welcome_email_enabled: 'true' });
      assert.equal(res.status, 200);
      assert.equal(res.body.code, '0');
      assert.equal(res.body.data.audit_log_retention_days, '90');
      assert.equal(res.body.data.welcome_email_enabled, 'true');
      assert.equal(
        res.body.data.session_idle_timeout_minutes,
        DEFAULTS.session_idle_timeout_minutes,
        'untouched keys are in the answer',
      );
      assert.deepEqual(await get(), res.body.data);
      await put({ audit_log_retention_days: DEFAULTS.audit_log_retention_days, welcome_email_enabled: 'false' });
    });

    test('numbers and booleans in the body are accepted as strings', async () => {
      const res = await put({ audit_log_retention_days: 120, welcome_email_enabled: true });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.data.audit_log_retention_days, '120');
      assert.equal(res.body.data.welcome_email_enabled, 'true');
      await put({ audit_log_retention_days: DEFAULTS.audit_log_retention_days, welcome_email_enabled: false });
      assert.equal((await get()).welcome_email_enabled, 'false');
    });

    test('values are stored in their canonical spelling', async () => {
      const res = await put({ audit_log_retention_days: ' 0042 ', welcome_email_enabled: 'TRUE' });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.data.audit_log_retention_days, '42');
      assert.equal(res.body.data.welcome_email_enabled, 'true');
      await put({ audit_log_retention_days: DEFAULTS.audit_log_retention_days, welcome_email_enabled: 'false' });
    });

    test('an unknown key → 400 E4001 naming it; nothing of a mixed PUT is saved', async () => {
      const alone = await put({ no_such_setting: '1' });
      assert.equal(alone.status, 400);
      assert.equal(alone.body.code, 'E4001');
      assert.match(alone.body.err, /no_such_setting/);

      const mixed = await put({ audit_log_retention_days: '7', no_such_setting: '1' });
      assert.equal(mixed.status, 400);
      assert.equal(mixed.body.code, 'E4001');
      assert.match(mixed.body.err, /no_such_setting/);
      assert.equal((await get()).audit_log_retention_days, DEFAULTS.audit_log_retention_days);
    });

    test('an invalid value → 400 E4001 naming the key; nothing saved', async () => {
      const cases: [string, unknown][] = [
        ['login_failure_attempts', 'abc'],
        ['login_failure_attempts', '0'],
        ['login_failure_attempts', '1.5'],
        ['login_failure_attempts', ''],
        ['session_idle_timeout_minutes', '-1'],
        ['session_idle_timeout_minutes', '99999999999'],
        ['password_min_length', 200],
        ['welcome_email_enabled', 'yes'],
        ['welcome_email_enabled', null],
        ['audit_log_retention_days', { n: 1 }],
        ['task_max_concurrent', 'abc'],
        ['task_max_concurrent', '0'],
        ['task_max_concurrent', '1001'],
        ['task_log_storage_backend', 'nowhere'],
      ];
      for (const [key, value] of cases) {
        const res = await put({ audit_log_retention_days: '3', [key]: value });
        assert.equal(res.status, 400, `${key}=${JSON.stringify(value)}`);
        assert.equal(res.body.code, 'E4001');
        assert.match(res.body.err, new RegExp(key), `${key}=${JSON.stringify(value)}: ${res.body.err}`);
      }
      const now = await get();
      for (const [key, value] of Object.entries(DEFAULTS)) assert.equal(now[key], value, key);
    });

    test('a body that is not an object → 400 E4001', async () => {
      for (const raw of ['[]', '"x"', '{']) {
        const res = await t.request('PUT', '/api/system/settings', { token: admin, raw });
        assert.equal(res.status, 400, raw);
        assert.equal(res.body.code, 'E4001');
      }
    });

    test('permissions: view to read, update to change', async () => {
      const nobody = await t.userWith([]);
      const viewer = await t.userWith(['system:settings:view']);
      const updater = await t.userWith(['system:settings:update']);

      assert.equal((await t.request('GET', '/api/system/settings')).body.code, 'E4011');
      const denied = await t.request('GET', '/api/system/settings', { token: nobody.token });
      assert.equal(denied.status, 403);
      assert.equal(denied.body.code, 'E4031');
      assert.equal((await t.request('GET', '/api/system/settings', { token: viewer.token })).status, 200);
      assert.equal((await t.request('GET', '/api/system/settings', { token: updater.token })).status, 403);

      const viewerPut = await put({ audit_log_retention_days: '11' }, viewer.token);
      assert.equal(viewerPut.status, 403);
      assert.equal(viewerPut.body.code, 'E4031');
      assert.equal((await get()).audit_log_retention_days, DEFAULTS.audit_log_retention_days);
      const ok = await put({ audit_log_retention_days: '11' }, updater.token);
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.body.data.audit_log_retention_days, '11');
      await put({ audit_log_retention_days: DEFAULTS.audit_log_retention_days });
    });

    test('definitions: each setting with its type, description and default; a secret is write-only', async () => {
      const res = await t.request('GET', '/api/system/settings/definitions', { token: admin });
      assert.equal(res.status, 200, res.text);
      const byKey = Object.fromEntries(res.body.data.map((d: { key: string }) => [d.key, d]));
      assert.deepEqual(Object.keys(byKey).sort(), Object.keys(await get()).sort());
      assert.deepEqual(byKey.password_min_length, {
        key: 'password_min_length',
        description: 'Minimum password length',
        type: 'integer',
        secret: false,
        default: '8',
        min: 6,
        max: 128,
        values: null,
      });
      assert.equal(byKey.welcome_email_enabled.type, 'boolean');
      assert.equal(byKey.task_log_storage_backend.type, 'enum');
      assert.deepEqual(byKey.task_log_storage_backend.values, ['database', 'file']);

      t.c.services.settings.registry.declare({
        key: 'test_api_secret',
        description: 'A secret of a test',
        default: 'initial-secret',
        schema: z.string().min(4, 'must be at least 4 characters'),
        secret: true,
      });
      const listed = (await t.request('GET', '/api/system/settings/definitions', { token: admin })).body.data;
      const secret = listed.find((d: { key: string }) => d.key === 'test_api_secret');
      assert.deepEqual(secret, {
        key: 'test_api_secret',
        description: 'A secret of a test',
        type: 'string',
        secret: true,
        default: null,
        min: null,
        max: null,
        values: null,
      });
      assert.equal((await put({ test_api_secret: 'abc' })).body.err, 'test_api_secret: must be at least 4 characters');
      const saved = await put({ test_api_secret: 'new-secret-value' });
      assert.equal(saved.status, 200, saved.text);
      assert.doesNotMatch(saved.text, /secret-value/);
      assert.equal(t.c.services.settings.get('test_api_secret'), 'new-secret-value');
      const records = await t.request('GET', '/api/audit-logs?resource_type=setting&page_size=100', { token: admin });
      const record = records.body.data.find((a: { resource_id: string }) => a.resource_id === 'test_api_secret');
      assert.deepEqual(record.details, {}, 'the audit record carries no value of a secret');
    });

    test('a change holds on this node at once', async () => {
      assert.equal((await put({ password_min_length: '12' })).status, 200);
      const short = await t.request('POST', '/api/users', {
        token: admin,
        body: { username: 'shortpw', email: 'shortpw@example.test', password: 'elevenchars' },
      });
      assert.equal(short.status, 400);
      assert.equal(short.body.code, 'E4001');
      assert.equal((await put({ password_min_length: '8' })).status, 200);
      const fine = await t.request('POST', '/api/users', {
        token: admin,
        body: { username: 'shortpw', email: 'shortpw@example.test', password: 'elevenchars' },
      });
      assert.equal(fine.status, 201, fine.text);

      assert.equal((await put({ login_failure_attempts: '2' })).status, 200);
      for (let i = 0; i < 2; i++)
        assert.equal(
          (await t.request('POST', '/api/auth/login', { body: { username: 'shortpw', password: 'wrong-password' } }))
            .status,
          401,
        );
      const locked = await t.request('GET', `/api/users/${fine.body.data.id}`, { token: admin });
      assert.equal(locked.body.data.status, 'locked');
      await put({ login_failure_attempts: DEFAULTS.login_failure_attempts });
    });
  });
}
