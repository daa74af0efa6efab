import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { AuditRecord } from '../db/repositories/audit-logs.ts';
import { writeMmdb } from './support/mmdb-writer.ts';
import { ADMIN_PASSWORD, captureLogs, lanes, startConsole, type TestConsole } from './support/harness.ts';

const UA = 'audit-test/1.0';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `d` written in local time at a fixed UTC offset, e.g. 2024-05-01T17:30:00.000+05:30. */
function withOffset(d: Date, minutes: number): string {
  const local = new Date(d.getTime() + minutes * 60_000).toISOString().slice(0, 23);
  const abs = Math.abs(minutes);
  return `${local}${minutes < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

for (const lane of lanes()) {
  describe(`audit log [${lane.name}]`, () => {
    let t: TestConsole;
    let admin: string;
    let adminId: string;
    const logs = captureLogs('error');
    const call = (method: string, url: string, body?: unknown, token = admin) =>
      t.request(method, url, { token, body, headers: { 'user-agent': UA } });
    const list = async (query: Record<string, string | number> = {}, token = admin) => {
      const qs = new URLSearchParams(
        Object.entries({ page_size: 100, ...query }).map(([k, v]): [string, string] => [k, String(v)]),
      );
      return t.request('GET', `/api/audit-logs?${qs}`, { token });
    };
    const items = async (query: Record<string, string | number> = {}) => {
      const res = await list(query);
      assert.equal(res.status, 200, res.text);
      return res.body.data as AuditRecord[];
    };
    const find = async (action: string, resource_type: string, resource_id: string) => {
      const found = (await items({ action, resource_type })).filter((r) => r.resource_id === resource_id);
      assert.equal(found.length, 1, `one ${action} ${resource_type} ${resource_id}`);
      return found[0]!;
    };
    const byAdmin = (r: AuditRecord) => {
      assert.equal(r.user_id, adminId);
      assert.equal(r.username, 'admin');
      assert.equal(r.status, 'success');
      assert.equal(r.ip, '127.0.0.1');
      assert.equal(r.user_agent, UA);
      return r;
    };
    /** The one record of this action on this resource, written by the admin's request. */
    const adminRecord = async (action: string, resource_type: string, resource_id: string) =>
      byAdmin(await find(action, resource_type, resource_id));

    before(async () => {
      t = await startConsole(lane, {}, { logger: logs.logger });
      admin = await t.login();
      adminId = (await t.request('GET', '/api/auth/me', { token: admin })).body.data.id;
    });
    after(async () => t.close());

    test('role create, update and delete are recorded with actor, resource, ip and user agent', async () => {
      const created = await call('POST', '/api/roles', {
        name: 'auditors',
        description: 'x',
        permissions: ['user:list'],
      });
      assert.equal(created.status, 201);
      const id = created.body.data.id as string;
      assert.equal((await call('PUT', `/api/roles/${id}`, { description: 'changed' })).status, 200);
      assert.equal((await call('DELETE', `/api/roles/${id}`)).status, 200);

      assert.equal(((await adminRecord('create', 'role', id)).details.after as { name: string }).name, 'auditors');
      const update = await adminRecord('update', 'role', id);
      assert.equal((update.details.before as { description: string }).description, 'x');
      assert.equal((update.details.after as { description: string }).description, 'changed');
      await adminRecord('delete', 'role', id);
    });

    test('user create, update, password reset, unlock and delete are recorded', async () => {
      const created = await call('POST', '/api/users', {
        username: 'audited',
        email: 'audited@example.test',
        password: 'first-password-1',
      });
      assert.equal(created.status, 201);
      const id = created.body.data.id as string;
      assert.equal((await call('PUT', `/api/users/${id}`, { full_name: 'Audited Person' })).status, 200);
      assert.equal((await call('PUT', `/api/users/${id}/password`, { password: 'second-password-2' })).status, 200);
      assert.equal((await call('POST', `/api/users/${id}/unlock`)).status, 200);
      assert.equal((await call('DELETE', `/api/users/${id}`)).status, 200);

      assert.equal(
        ((await adminRecord('create', 'user', id)).details.after as { username: string }).username,
        'audited',
      );
      assert.equal(
        ((await adminRecord('update', 'user', id)).details.after as { full_name: string }).full_name,
        'Audited Person',
      );
      for (const action of ['password_reset', 'unlock', 'delete']) await adminRecord(action, 'user', id);
    });

    test('own password change is recorded against the user', async () => {
      const u = await t.userWith([]);
      const res = await call(
        'PUT',
        '/api/auth/me/password',
        { old_password: 'password-1', new_password: 'password-2-new' },
        u.token,
      );
      assert.equal(res.status, 200, res.text);
      const r = await find('password_change', 'user', u.id);
      assert.equal(r.user_id, u.id);
      assert.equal(r.username, u.username);
      assert.equal(r.user_agent, UA);
    });

    test('a settings update is recorded with before and after, one record per key', async () => {
      assert.equal(
        (await call('PUT', '/api/system/settings', { audit_log_retention_days: '400', password_min_length: '9' }))
          .status,
        200,
      );
      assert.deepEqual((await adminRecord('update', 'setting', 'audit_log_retention_days')).details, {
        before: '365',
        after: '400',
      });
      // A setting whose name merely mentions passwords is not a secret: its values stay readable.
      assert.deepEqual((await find('update', 'setting', 'password_min_length')).details, { before: '8', after: '9' });
      assert.equal((await call('PUT', '/api/system/settings', { password_min_length: '8' })).status, 200);
    });

    test('updating every setting at once is recorded (one record per key)', async () => {
      const map = (await call('GET', '/api/system/settings')).body.data as Record<string, string>;
      assert.equal((await call('PUT', '/api/system/settings', map)).status, 200);
      for (const key of Object.keys(map))
        byAdmin((await items({ action: 'update', resource_type: 'setting' })).find((r) => r.resource_id === key)!);
    });

    test('login, failed logins and logout are recorded', async () => {
      const headers = { 'user-agent': UA };
      const ok = await t.request('POST', '/api/auth/login', {
        body: { username: 'admin', password: ADMIN_PASSWORD },
        headers,
      });
      assert.equal(ok.status, 200);
      const token = ok.body.data.token as string;
      const wrong = await t.request('POST', '/api/auth/login', {
        body: { username: 'admin', password: 'wrong-password-x' },
        headers,
      });
      assert.equal(wrong.status, 401);
      const unknown = await t.request('POST', '/api/auth/login', {
        body: { username: 'nobody-here', password: 'whatever-pass' },
        headers,
      });
      assert.equal(unknown.status, 401);
      assert.equal((await t.request('POST', '/api/auth/logout', { token, headers })).status, 200);

      const logins = await items({ action: 'login', user_id: adminId });
      const login = logins[0]!;
      byAdmin(login);
      assert.equal(login.resource_type, 'session');
      await adminRecord('logout', 'session', login.resource_id);

      const failures = await items({ action: 'login_failed' });
      const wrongRec = failures.find((r) => r.user_id === adminId);
      assert.ok(wrongRec);
      assert.equal(wrongRec.status, 'failure');
      assert.equal(wrongRec.username, 'admin');
      assert.equal(wrongRec.ip, '127.0.0.1');
      assert.equal(wrongRec.user_agent, UA);
      const unknownRec = failures.find((r) => r.username === 'nobody-here');
      assert.ok(unknownRec);
      assert.equal(unknownRec.user_id, null);
      assert.equal(unknownRec.status, 'failure');
      assert.equal(unknownRec.resource_type, 'session');
    });

    test('no password or password hash appears in any record', async () => {
      const hashes = ((await t.c.db.knex(t.c.db.t.users).select('password_hash')) as { password_hash: string }[]).map(
        (r) => r.password_hash,
      );
      assert.ok(hashes.length > 1);
      const stored = JSON.stringify(await t.c.db.knex(t.c.db.t.auditLogs).select('*'));
      const served = (await list({ page_size: 100 })).text;
      const secrets = [
        ADMIN_PASSWORD,
        'first-password-1',
        'second-password-2',
        'password-1',
        'password-2-new',
        'wrong-password-x',
        'whatever-pass',
        ...hashes,
      ];
      for (const text of [stored, served]) {
        for (const secret of secrets) assert.ok(!text.includes(secret), `record contains ${secret.slice(0, 12)}…`);
        assert.doesNotMatch(text, /password_hash/);
      }
    });

    test('filters: user_id, action, resource_type', async () => {
      const u = await t.userWith(['role:create']);
      assert.equal((await call('POST', '/api/roles', { name: 'by-user', permissions: [] }, u.token)).status, 201);
      const mine = await items({ user_id: u.id });
      assert.ok(mine.length >= 2, 'login and role create');
      assert.ok(mine.every((r) => r.user_id === u.id));
      assert.ok(mine.some((r) => r.action === 'create' && r.resource_type === 'role'));

      const creates = await items({ action: 'create' });
      assert.ok(creates.length > 0 && creates.every((r) => r.action === 'create'));
      assert.ok(creates.some((r) => r.resource_type === 'user') && creates.some((r) => r.resource_type === 'role'));
      const roles = await items({ resource_type: 'role' });
      assert.ok(roles.length > 0 && roles.every((r) => r.resource_type === 'role'));
      assert.deepEqual(await items({ action: 'no-such-action' }), []);
    });

    test('filters: a time range with offsets selects exactly the records inside it', async () => {
      await sleep(15);
      const from = new Date();
      const ids: string[] = [];
      for (const name of ['window-a', 'window-b', 'window-c'])
        ids.push((await call('POST', '/api/roles', { name })).body.data.id);
      const to = new Date();
      await sleep(15);
      assert.equal((await call('POST', '/api/roles', { name: 'window-after' })).status, 201);

      const inside = await items({
        resource_type: 'role',
        action: 'create',
        start_time: withOffset(from, 330),
        end_time: withOffset(to, -180),
      });
      assert.deepEqual(inside.map((r) => r.resource_id).sort(), [...ids].sort());
      const zulu = await items({
        resource_type: 'role',
        action: 'create',
        start_time: from.toISOString(),
        end_time: to.toISOString(),
      });
      assert.deepEqual(zulu.map((r) => r.id).sort(), inside.map((r) => r.id).sort());
      const later = await items({
        resource_type: 'role',
        action: 'create',
        start_time: withOffset(new Date(to.getTime() + 5), 60),
      });
      assert.deepEqual(
        later.map((r) => (r.details.after as { name: string }).name),
        ['window-after'],
      );
      const earlier = await items({
        resource_type: 'role',
        action: 'create',
        end_time: withOffset(new Date(from.getTime() - 5), -600),
      });
      assert.ok(earlier.every((r) => Date.parse(r.created_at) < from.getTime()));
      assert.ok(!earlier.some((r) => ids.includes(r.resource_id)));
    });

    test('bad filters → 400 E4001 naming the field', async () => {
      const cases: [string, string][] = [
        ['start_time', 'yesterday'],
        ['end_time', '2024-13-01T00:00:00Z'],
        ['start_time', '2024-01-01T00:00:00'],
        ['user_id', 'not-a-uuid'],
        ['page_size', '101'],
        ['current', '0'],
      ];
      for (const [field, value] of cases) {
        const res = await list({ [field]: value });
        assert.equal(res.status, 400, `${field}=${value}`);
        assert.equal(res.body.code, 'E4001');
        assert.match(res.body.err, new RegExp(field));
      }
    });

    test('pagination: total, current, page_size; newest first', async () => {
      const all = await list({ page_size: 100 });
      const total = all.body.total as number;
      assert.ok(total >= 10);
      const rows = all.body.data as AuditRecord[];
      for (let i = 1; i < rows.length; i++)
        assert.ok(Date.parse(rows[i - 1]!.created_at) >= Date.parse(rows[i]!.created_at), 'newest first');

      const p1 = await list({ page_size: 3, current: 1 });
      const p2 = await list({ page_size: 3, current: 2 });
      for (const [p, n] of [
        [p1, 1],
        [p2, 2],
      ] as const) {
        assert.equal(p.status, 200);
        assert.equal(p.body.code, '0');
        assert.equal(p.body.total, total);
        assert.equal(p.body.current, n);
        assert.equal(p.body.page_size, 3);
        assert.equal(p.body.data.length, 3);
      }
      assert.deepEqual(
        [...p1.body.data, ...p2.body.data].map((r: AuditRecord) => r.id),
        rows.slice(0, 6).map((r) => r.id),
      );
      const dflt = await t.request('GET', '/api/audit-logs', { token: admin });
      assert.equal(dflt.body.page_size, 10);
      assert.equal(dflt.body.current, 1);
      assert.equal(dflt.body.data.length, 10);
      const beyond = await list({ page_size: 10, current: 10_000 });
      assert.deepEqual(beyond.body.data, []);
      assert.equal(beyond.body.total, total);
    });

    test('permission audit_log:list is required', async () => {
      assert.equal((await t.request('GET', '/api/audit-logs')).body.code, 'E4011');
      const nobody = await t.userWith(['user:list']);
      const denied = await list({}, nobody.token);
      assert.equal(denied.status, 403);
      assert.equal(denied.body.code, 'E4031');
      const reader = await t.userWith(['audit_log:list']);
      assert.equal((await list({}, reader.token)).status, 200);
    });

    test('a failing audit write does not fail the request and is counted', async () => {
      const failures = async () => {
        const text = (await t.request('GET', '/metrics')).text;
        return Number(/^audit_write_failures_total (\d+)/m.exec(text)?.[1]);
      };
      const before = await failures();
      assert.equal(before, 0);
      const { knex, t: tables } = t.c.db;
      await knex.schema.renameTable(tables.auditLogs, `${tables.auditLogs}_away`);
      try {
        const res = await call('POST', '/api/roles', { name: 'unaudited' });
        assert.equal(res.status, 201, res.text);
        assert.equal(
          (await t.request('POST', '/api/auth/login', { body: { username: 'admin', password: ADMIN_PASSWORD } }))
            .status,
          200,
        );
      } finally {
        await knex.schema.renameTable(`${tables.auditLogs}_away`, tables.auditLogs);
      }
      assert.equal(await failures(), 2);
      assert.equal(logs.lines.filter((l) => l.msg === 'audit write failed').length, 2, 'each failure is logged');
      const roleCreates = await items({ resource_type: 'role', action: 'create' });
      assert.ok(!roleCreates.some((r) => (r.details.after as { name: string }).name === 'unaudited'));
    });
  });

  describe(`audit geoip [${lane.name}]`, () => {
    let dir: string;
    let file: string;
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'console-audit-geo-'));
      file = join(dir, 'GeoLite2-City.mmdb');
      writeMmdb(file, [
        {
          cidr: '81.2.69.0/24',
          data: { country: { iso_code: 'DE', names: { en: 'Germany' } }, city: { names: { en: 'Berlin' } } },
        },
      ]);
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    const loginFrom = async (trustProxy: boolean) => {
      const t = await startConsole(lane, { server: { geoip_db_path: file, trust_proxy: trustProxy } });
      try {
        const headers = { 'x-forwarded-for': '81.2.69.142' };
        assert.equal(
          (
            await t.request('POST', '/api/auth/login', {
              body: { username: 'admin', password: ADMIN_PASSWORD },
              headers,
            })
          ).status,
          200,
        );
        assert.equal(
          (
            await t.request('POST', '/api/auth/login', {
              body: { username: 'admin', password: 'wrong-password' },
              headers,
            })
          ).status,
          401,
        );
        const token = await t.login();
        const res = await t.request('GET', '/api/audit-logs?resource_type=session&page_size=100', { token });
        const rows = res.body.data as AuditRecord[];
        return {
          login: rows.filter((r) => r.action === 'login').at(-1)!,
          failed: rows.find((r) => r.action === 'login_failed')!,
        };
      } finally {
        await t.close();
      }
    };

    test('with trust_proxy, X-Forwarded-For gives the ip and the geo details', async () => {
      const { login, failed } = await loginFrom(true);
      for (const r of [login, failed]) {
        assert.equal(r.ip, '81.2.69.142');
        assert.deepEqual(r.details.geo, { country: 'DE', city: 'Berlin' });
      }
    });

    test('without trust_proxy the header is ignored', async () => {
      const { login, failed } = await loginFrom(false);
      for (const r of [login, failed]) {
        assert.equal(r.ip, '127.0.0.1');
        assert.equal(r.details.geo, undefined);
      }
    });
  });
}
