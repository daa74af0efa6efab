import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { lanes, startConsole, ADMIN_PASSWORD, type TestConsole } from './support/harness.ts';

for (const lane of lanes()) {
  describe(`auth [${lane.name}]`, () => {
    let t: TestConsole;
    before(async () => {
      t = await startConsole(lane);
    });
    after(async () => t.close());

    test('login answers a token and the user; me shows roles and permissions', async () => {
      const res = await t.request('POST', '/api/auth/login', { body: { username: 'admin', password: ADMIN_PASSWORD } });
      assert.equal(res.status, 200);
      assert.equal(res.body.code, '0');
      assert.match(res.body.data.token, /^ey/);
      assert.equal(res.body.data.user.username, 'admin');
      const me = await t.request('GET', '/api/auth/me', { token: res.body.data.token });
      assert.equal(me.status, 200);
      assert.deepEqual(me.body.data.roles.map((r: { name: string }) => r.name), ['admin']);
      assert.ok(me.body.data.permissions.includes('user:create'));
    });

    test('wrong password and unknown user answer the same E4011', async () => {
      const wrong = await t.request('POST', '/api/auth/login', { body: { username: 'admin', password: 'nope' } });
      const unknown = await t.request('POST', '/api/auth/login', { body: { username: 'ghost', password: 'nope' } });
      assert.equal(wrong.status, 401);
      assert.equal(wrong.body.code, 'E4011');
      assert.deepEqual(unknown.body, wrong.body);
    });

    test('logout ends the session; refresh keeps it', async () => {
      const token = await t.login();
      const refreshed = await t.request('POST', '/api/auth/refresh', { token });
      assert.equal(refreshed.status, 200);
      const second = refreshed.body.data.token as string;
      assert.equal((await t.request('GET', '/api/auth/me', { token: second })).status, 200);
      const out = await t.request('POST', '/api/auth/logout', { token });
      assert.equal(out.status, 200);
      for (const tok of [token, second]) {
        const me = await t.request('GET', '/api/auth/me', { token: tok });
        assert.equal(me.status, 401);
        assert.equal(me.body.code, 'E4011');
      }
    });
  });
}
