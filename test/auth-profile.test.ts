import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { resetLinkPath } from '../routers/auth/password-reset.ts';
import { lanes, startConsole, type TestConsole } from './support/harness.ts';

test('a reset link opens the web console page with the token in the fragment, or /reset-password without it', () => {
  assert.equal(resetLinkPath('a/b+c', '/admin'), '/admin/reset-password#token=a%2Fb%2Bc');
  assert.equal(resetLinkPath('a/b+c', undefined), '/reset-password?token=a%2Fb%2Bc');
});

for (const lane of lanes()) {
  describe(`own profile and the generated password [${lane.name}]`, () => {
    let t: TestConsole;
    let generated = '';

    before(async () => {
      // No configured password: the first start generates one and announces it.
      t = await startConsole(
        lane,
        { bootstrap: { admin_password: undefined } },
        { announce: (text) => (generated = /password: (\S+)/.exec(text)?.[1] ?? generated) },
      );
    });
    after(() => t?.close());

    test('/auth/me says the password is the generated one until it is changed', async () => {
      assert.ok(generated, 'a password was announced');
      let token = await t.login('admin', generated);
      assert.equal((await t.request('GET', '/api/auth/me', { token })).body.data.password_generated, true);
      const changed = await t.request('PUT', '/api/auth/me/password', {
        token,
        body: { old_password: generated, new_password: 'admin-password-1' },
      });
      assert.equal(changed.status, 200, changed.text);
      token = await t.login('admin', 'admin-password-1');
      assert.equal((await t.request('GET', '/api/auth/me', { token })).body.data.password_generated, false);
      const user = await t.userWith([]);
      assert.equal((await t.request('GET', '/api/auth/me', { token: user.token })).body.data.password_generated, false);
    });

    test('PUT /auth/me changes own fields without user:update; email and MFA take the current password', async () => {
      const user = await t.userWith([]);
      const put = (body: Record<string, unknown>) => t.request('PUT', '/api/auth/me', { token: user.token, body });
      const named = await put({ full_name: 'Own Name' });
      assert.equal(named.status, 200, named.text);
      assert.equal(named.body.data.full_name, 'Own Name');

      for (const body of [{ mfa_enabled: true }, { mfa_enabled: true, password: 'wrong-password' }]) {
        const refused = await put(body);
        assert.equal(refused.status, 400);
        assert.equal(refused.body.code, 'E4001');
        assert.match(refused.body.err, /^password: /);
      }
      const bad = await put({ email: 'not an email' });
      assert.equal(bad.status, 400);
      assert.match(bad.body.err, /email/);

      const mfa = await put({ mfa_enabled: true, email: `${user.username}-2@example.test`, password: 'password-1' });
      assert.equal(mfa.status, 200, mfa.text);
      assert.equal(mfa.body.data.mfa_enabled, true);
      const me = await t.request('GET', '/api/auth/me', { token: user.token });
      assert.equal(me.body.data.email, `${user.username}-2@example.test`);
      assert.equal(me.body.data.mfa_enabled, true);
      // The same values again need no password.
      assert.equal((await put({ mfa_enabled: true, email: me.body.data.email })).status, 200);
      assert.equal((await put({ mfa_enabled: false, password: 'password-1' })).body.data.mfa_enabled, false);
      assert.equal((await t.request('PUT', '/api/auth/me', { body: { full_name: 'x' } })).status, 401);
    });

    test('the OpenAPI document has PUT /auth/me and the flag', async () => {
      const doc = (await t.request('GET', '/api/openapi.json')).body;
      assert.ok(doc.paths['/auth/me'].put);
      assert.ok(JSON.stringify(doc.components.schemas.CurrentUser).includes('password_generated'));
    });
  });
}
