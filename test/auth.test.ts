import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { decodeJwt, SignJWT } from 'jose';
import { PasswordHasher } from '../routers/auth/password-hash.ts';
import { lanes, ADMIN_PASSWORD, type TestConsole } from './support/harness.ts';
import {
  assertError,
  createUser,
  ok,
  PASSWORD,
  putSettings,
  setColumn,
  unique,
  startWithAdmin,
} from './support/identity.ts';

const JWT_SECRET = 'auth-test-secret-0123456789abcdef';
const MINUTE = 60_000;
/** What an answer says, without its per-request `trace_id`: anti-enumeration compares these. */
/** The one answer of a refused login: wrong password, unknown user, or any password during a lock. */
const BAD_CREDENTIALS = 'invalid username or password';
const envelope = (body: { code?: unknown; err?: unknown }) => ({ code: body.code, err: body.err });

for (const lane of lanes()) {
  describe(`auth [${lane.name}]`, () => {
    let t: TestConsole;
    let admin: string;
    before(async () => ({ t, admin } = await startWithAdmin(lane, { jwt: { secret: JWT_SECRET } })));
    after(async () => t.close());

    const login = (username: string, password: string) =>
      t.request('POST', '/api/auth/login', { body: { username, password } });
    const me = (token: string) => t.request('GET', '/api/auth/me', { token });
    const userStatus = async (id: string) =>
      ok(await t.request('GET', `/api/users/${id}`, { token: admin })).status as string;
    /** Lockout after `attempts` failures, for the length of one test. */
    const withLockout = async (attempts: number, body: () => Promise<void>) => {
      await putSettings(t, admin, { login_failure_attempts: String(attempts), login_failure_lockout_minutes: '1' });
      try {
        await body();
      } finally {
        await putSettings(t, admin, { login_failure_attempts: '5', login_failure_lockout_minutes: '10' });
      }
    };

    test('login answers a token and the user; me shows roles and permissions', async () => {
      const res = await login('admin', ADMIN_PASSWORD);
      const data = ok(res);
      assert.match(data.token, /^ey/);
      assert.equal(data.user.username, 'admin');
      assert.ok(!Number.isNaN(Date.parse(data.expires_at)));
      const claims = decodeJwt(data.token);
      assert.equal(claims.sub, data.user.id);
      assert.equal(claims.username, 'admin');
      assert.equal(typeof claims.sid, 'string');
      const mine = ok(await me(data.token));
      assert.deepEqual(
        mine.roles.map((r: { name: string }) => r.name),
        ['admin'],
      );
      assert.ok(mine.permissions.includes('user:create'));
      assert.ok(mine.roles[0].permissions.includes('role:delete'));
      // Login by email works too, case-insensitively.
      ok(await login(mine.email.toUpperCase(), ADMIN_PASSWORD));
    });

    test('wrong password and unknown user answer the same E4011; missing fields → E4001', async () => {
      const wrong = await login('admin', 'nope-nope');
      const unknown = await login('ghost', 'nope-nope');
      assertError(wrong, 401, 'E4011');
      assert.deepEqual(envelope(unknown.body), envelope(wrong.body));
      assertError(
        await t.request('POST', '/api/auth/login', { body: { username: 'admin' } }),
        400,
        'E4001',
        /^password: /,
      );
    });

    /** Counts the password checks `body` makes. */
    const checksDuring = async (body: () => Promise<void>): Promise<number> => {
      const verify = PasswordHasher.prototype.verify;
      let checks = 0;
      PasswordHasher.prototype.verify = function (...args) {
        checks++;
        return verify.apply(this, args);
      };
      try {
        await body();
      } finally {
        PasswordHasher.prototype.verify = verify;
      }
      return checks;
    };

    test('lockout after login_failure_attempts failures; during it every password gets one answer, none checked', async () => {
      const user = await createUser(t, admin);
      const token = await t.login(user.username, PASSWORD);
      await withLockout(3, async () => {
        for (let i = 0; i < 3; i++) assertError(await login(user.username, 'wrong-password'), 401, 'E4011');
        assert.equal(await userStatus(user.id), 'locked');
        const ghost = envelope((await login(unique('ghost'), 'wrong-password')).body);
        const checks = await checksDuring(async () => {
          for (const [name, password] of [
            [user.username, 'wrong-password'],
            [user.username, PASSWORD],
            [user.email, PASSWORD],
          ])
            assert.deepEqual(envelope((await login(name!, password!)).body), ghost, `${name} / ${password}`);
        });
        assert.equal(checks, 0, 'no password is checked during a lock');
        // A locked user's token stops working at once.
        assertError(await me(token), 401, 'E4012');
      });
    });

    test('a tRPC batch of guesses stops at the lock', async () => {
      const user = await createUser(t, admin);
      await withLockout(3, async () => {
        const calls = 8;
        let answers: { error?: { appCode: string } }[] = [];
        const checks = await checksDuring(async () => {
          const batch = await t.request('POST', `/trpc/${Array(calls).fill('auth.login').join(',')}?batch=1`, {
            body: Object.fromEntries(
              Array.from({ length: calls }, (_, i) => [i, { username: user.username, password: `wrong-${i}` }]),
            ),
          });
          answers = batch.body;
        });
        assert.deepEqual(
          answers.map((a) => a.error?.appCode),
          Array(calls).fill('E4011'),
        );
        assert.equal(checks, 3, 'the calls after the lock are not checked');
        assert.equal(await userStatus(user.id), 'locked');
      });
    });

    test('a success resets the failure count; only consecutive failures lock', async () => {
      const user = await createUser(t, admin);
      await withLockout(3, async () => {
        for (let round = 0; round < 3; round++) {
          for (let i = 0; i < 2; i++) assertError(await login(user.username, 'wrong-password'), 401, 'E4011');
          ok(await login(user.username, PASSWORD));
        }
        assert.equal(await userStatus(user.id), 'active');
      });
    });

    test('a burst of 20 concurrent correct logins never locks; 20 wrong ones lock', async () => {
      const user = await createUser(t, admin);
      await withLockout(3, async () => {
        const burst = await Promise.all(Array.from({ length: 20 }, () => login(user.username, PASSWORD)));
        assert.deepEqual(
          burst.map((r) => r.status),
          Array(20).fill(200),
        );
        assert.equal(await userStatus(user.id), 'active');
        const checks = await checksDuring(async () => {
          const wrong = await Promise.all(Array.from({ length: 20 }, () => login(user.username, 'wrong-password')));
          assert.ok(wrong.every((r) => r.status === 401 && r.body.code === 'E4011'));
        });
        assert.equal(checks, 3, 'concurrent guesses stop at the lock');
        assert.equal(await userStatus(user.id), 'locked');
      });
    });

    test('a lock ends after login_failure_lockout_minutes, and locks again after new failures', async () => {
      const user = await createUser(t, admin);
      const expire = async () => {
        await setColumn(t, 'users', user.id, 'locked_until', new Date(Date.now() - 1000));
        await t.c.services.identities.changed('users');
      };
      await withLockout(2, async () => {
        for (let i = 0; i < 2; i++) await login(user.username, 'wrong-password');
        assertError(await login(user.username, PASSWORD), 401, 'E4011', BAD_CREDENTIALS);
        // Failures while locked do not pile up into the next lock.
        for (let i = 0; i < 3; i++) await login(user.username, 'wrong-password');
        await expire();
        assert.equal(await userStatus(user.id), 'active');
        assertError(await login(user.username, 'wrong-password'), 401, 'E4011');
        ok(await login(user.username, PASSWORD));

        for (let i = 0; i < 2; i++) await login(user.username, 'wrong-password');
        assertError(await login(user.username, PASSWORD), 401, 'E4011', BAD_CREDENTIALS);
        await expire();
        // An expired lock that nobody cleared by logging in still counts failures and locks again.
        for (let i = 0; i < 2; i++) assertError(await login(user.username, 'wrong-password'), 401, 'E4011');
        assertError(await login(user.username, PASSWORD), 401, 'E4011', BAD_CREDENTIALS);
        assert.equal(await userStatus(user.id), 'locked');
      });
    });

    test('POST /users/:id/unlock ends a lock, with or without a JSON content type', async () => {
      const user = await createUser(t, admin);
      await withLockout(2, async () => {
        for (const headers of [{}, { 'content-type': 'application/json' }] as Record<string, string>[]) {
          for (let i = 0; i < 2; i++) await login(user.username, 'wrong-password');
          assert.equal(await userStatus(user.id), 'locked');
          const res = ok(await t.request('POST', `/api/users/${user.id}/unlock`, { token: admin, headers }));
          assert.equal(res.status, 'active');
          ok(await login(user.username, PASSWORD));
        }
        // Unlocking an account that is not locked changes nothing.
        assert.equal(ok(await t.request('POST', `/api/users/${user.id}/unlock`, { token: admin })).status, 'active');
        const viewer = await t.userWith(['user:view']);
        assertError(await t.request('POST', `/api/users/${user.id}/unlock`, { token: viewer.token }), 403, 'E4031');
      });
    });

    test('E4011 for a missing, malformed, wrongly signed or expired token', async () => {
      const good = await t.login();
      const claims = decodeJwt(good);
      const sign = (secret: string, exp: number) =>
        new SignJWT({ username: 'admin', sid: claims.sid as string })
          .setProtectedHeader({ alg: 'HS256' })
          .setSubject(claims.sub!)
          .setIssuedAt(exp - 60)
          .setExpirationTime(exp)
          .sign(new TextEncoder().encode(secret));
      const now = Math.floor(Date.now() / 1000);
      ok(await me(await sign(JWT_SECRET, now + 60)), 200);
      for (const headers of [
        {},
        { authorization: 'Bearer' },
        { authorization: 'Bearer garbage' },
        { authorization: `Basic ${good}` },
        { authorization: `Bearer ${good}x` },
      ] as Record<string, string>[]) {
        assertError(await t.request('GET', '/api/auth/me', { headers }), 401, 'E4011');
      }
      assertError(await me(await sign('another-secret-0123456789abcdef', now + 60)), 401, 'E4011');
      assertError(await me(await sign(JWT_SECRET, now - 5)), 401, 'E4011');
      const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${good.split('.')[1]}.`;
      assertError(await me(none), 401, 'E4011');
    });

    test('E4012 for the valid token of a deleted, disabled or unknown user', async () => {
      const gone = await createUser(t, admin);
      const goneToken = await t.login(gone.username, PASSWORD);
      ok(await t.request('DELETE', `/api/users/${gone.id}`, { token: admin }));
      assertError(await me(goneToken), 401, 'E4012');

      const off = await createUser(t, admin);
      const offToken = await t.login(off.username, PASSWORD);
      ok(await t.request('PUT', `/api/users/${off.id}`, { token: admin, body: { status: 'disabled' } }));
      assertError(await me(offToken), 401, 'E4012');
      assertError(
        await login(off.username, 'wrong-password'),
        401,
        'E4011',
        (await login('ghost', 'wrong-password')).body.err,
      );
      assertError(await login(off.username, PASSWORD), 401, 'E4011', /disabled/);

      const stranger = await new SignJWT({ username: 'x', sid: randomUUID() })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(randomUUID())
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(new TextEncoder().encode(JWT_SECRET));
      assertError(await me(stranger), 401, 'E4012');
    });

    test('a session logged out while a request was using it stays logged out', async () => {
      const token = await t.login();
      const { identities } = t.c.services;
      const session = (await identities.session(decodeJwt(token).sid as string))!;
      ok(await t.request('POST', '/api/auth/logout', { token }));
      // The request that read the session before the logout records its activity afterwards.
      await identities.touch(session, new Date(Date.now() + 120_000), 60_000);
      assertError(await me(token), 401, 'E4011');
    });

    test('logout ends the session (with or without a JSON content type); refresh keeps it', async () => {
      for (const headers of [{}, { 'content-type': 'application/json' }] as Record<string, string>[]) {
        const token = await t.login();
        const second = ok(await t.request('POST', '/api/auth/refresh', { token, headers })).token as string;
        assert.equal(decodeJwt(second).sid, decodeJwt(token).sid);
        ok(await me(second));
        ok(await t.request('POST', '/api/auth/logout', { token, headers }));
        for (const tok of [token, second]) assertError(await me(tok), 401, 'E4011');
        assertError(await t.request('POST', '/api/auth/refresh', { token: second }), 401, 'E4011');
        assertError(await t.request('POST', '/api/auth/logout', { token }), 401, 'E4011');
      }
      // Other sessions of the same user live on.
      const a = await t.login();
      const b = await t.login();
      ok(await t.request('POST', '/api/auth/logout', { token: a }));
      ok(await me(b));
    });

    test('an idle session ends after session_idle_timeout_minutes', async () => {
      const token = await t.login();
      const other = await t.login();
      await putSettings(t, admin, { session_idle_timeout_minutes: '1' });
      try {
        ok(await me(token));
        await setColumn(
          t,
          'sessions',
          decodeJwt(token).sid as string,
          'last_seen_at',
          new Date(Date.now() - 2 * MINUTE),
        );
        await t.c.services.identities.changed('sessions');
        assertError(await me(token), 401, 'E4011');
        ok(await me(other));
      } finally {
        await putSettings(t, admin, { session_idle_timeout_minutes: '1440' });
      }
    });

    test('PUT /auth/me/password: the old password must match; success ends every session', async () => {
      const user = await createUser(t, admin);
      const [a, b] = [await t.login(user.username, PASSWORD), await t.login(user.username, PASSWORD)];
      const change = (token: string, body: unknown) => t.request('PUT', '/api/auth/me/password', { token, body });
      assertError(await change(a, { old_password: 'not-it-at-all', new_password: 'new-password-1' }), 400, 'E4001');
      assertError(await change(a, { old_password: PASSWORD, new_password: 'short' }), 400, 'E4001');
      assertError(await change(a, { old_password: PASSWORD }), 400, 'E4001', /^new_password: /);
      ok(await me(a));
      ok(await change(a, { old_password: PASSWORD, new_password: 'new-password-1' }));
      for (const tok of [a, b]) assertError(await me(tok), 401, 'E4011');
      assertError(await login(user.username, PASSWORD), 401, 'E4011');
      ok(await login(user.username, 'new-password-1'));
      assertError(
        await t.request('PUT', '/api/auth/me/password', { body: { old_password: 'x', new_password: 'y' } }),
        401,
        'E4011',
      );
    });

    test("PUT /users/:id/password sets the password and ends that user's sessions only", async () => {
      const user = await createUser(t, admin);
      const token = await t.login(user.username, PASSWORD);
      const data = ok(
        await t.request('PUT', `/api/users/${user.id}/password`, {
          token: admin,
          body: { password: 'reset-password-1' },
        }),
      );
      assert.equal(data.id, user.id);
      assertError(await me(token), 401, 'E4011');
      ok(await me(admin));
      assertError(await login(user.username, PASSWORD), 401, 'E4011');
      ok(await login(user.username, 'reset-password-1'));
      assertError(
        await t.request('PUT', `/api/users/${user.id}/password`, { token: admin, body: {} }),
        400,
        'E4001',
        /^password: /,
      );
    });

    test('malformed JSON and a wrong content type → 400 E4001', async () => {
      assertError(await t.request('POST', '/api/auth/login', { raw: '{"username": "admin", ' }), 400, 'E4001');
      assertError(await t.request('POST', '/api/auth/login', { raw: '["admin"]' }), 400, 'E4001');
      assertError(
        await t.request('POST', '/api/auth/login', {
          raw: 'username=admin',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
        400,
        'E4001',
      );
      assertError(
        await t.request('POST', '/api/auth/login', { raw: 'admin', headers: { 'content-type': 'text/plain' } }),
        400,
        'E4001',
      );
      assertError(await t.request('POST', '/api/users', { token: admin, raw: '{bad' }), 400, 'E4001');
      assertError(
        await t.request('POST', '/api/auth/login', { headers: { 'content-type': 'application/json' } }),
        400,
        'E4001',
        /^username: /,
      );
    });
  });
}
