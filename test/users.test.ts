import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { lanes, type TestConsole } from './support/harness.ts';
import {
  assertError,
  assertPaginationRules,
  createRole,
  createUser,
  ok,
  PASSWORD,
  putSettings,
  setColumn,
  sleep,
  unique,
  startWithAdmin,
  UNKNOWN_ID,
} from './support/identity.ts';

const USER_KEYS = [
  'avatar',
  'created_at',
  'email',
  'full_name',
  'id',
  'last_login_at',
  'mfa_enabled',
  'roles',
  'status',
  'updated_at',
  'username',
];
const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

for (const lane of lanes()) {
  describe(`users [${lane.name}]`, () => {
    let t: TestConsole;
    let admin: string;
    before(async () => ({ t, admin } = await startWithAdmin(lane)));
    after(async () => t.close());

    const list = (query: string, token = admin) => t.request('GET', `/api/users?${query}`, { token });

    test('create answers 201 with the documented user JSON, never the password', async () => {
      const role = await createRole(t, admin, ['user:list']);
      const name = unique();
      const res = await t.request('POST', '/api/users', {
        token: admin,
        body: {
          username: name,
          email: `${name}@Example.test`,
          password: PASSWORD,
          full_name: 'Ann Example',
          role_ids: [role.id],
        },
      });
      const user = ok(res, 201);
      assert.deepEqual(Object.keys(user).sort(), USER_KEYS);
      assert.match(user.id, /^[0-9a-f-]{36}$/);
      assert.equal(user.username, name);
      assert.equal(user.email, `${name}@Example.test`);
      assert.equal(user.full_name, 'Ann Example');
      assert.equal(user.status, 'active');
      assert.equal(user.mfa_enabled, false);
      assert.equal(user.last_login_at, null);
      assert.deepEqual(user.roles, [{ id: role.id, name: role.name }]);
      assert.match(user.created_at, ISO_UTC);
      assert.match(user.updated_at, ISO_UTC);
      assert.doesNotMatch(res.text, /password|scrypt/);

      assert.deepEqual(ok(await t.request('GET', `/api/users/${user.id}`, { token: admin })), user);
      const logged = ok(
        await t.request('POST', '/api/auth/login', { body: { username: name.toUpperCase(), password: PASSWORD } }),
      );
      assert.equal(logged.user.id, user.id);
      assert.match(logged.user.last_login_at, ISO_UTC);
    });

    test('usernames: 3–32 letters or digits, with _ . - inside only', async () => {
      for (const good of ['abc', 'a'.repeat(32), 'a_b', 'a.b-c', 'A1-2_3.4Z']) {
        const name = `${good}`;
        const user = await createUser(t, admin, { username: name, email: `${unique()}@example.test` });
        assert.equal(user.username, name);
        ok(await t.request('DELETE', `/api/users/${user.id}`, { token: admin }));
      }
      for (const bad of ['ab', 'a'.repeat(33), '_abc', 'abc_', '.abc', 'abc-', 'ab c', 'abé', 'a@bc', '', 42]) {
        const res = await t.request('POST', '/api/users', {
          token: admin,
          body: { username: bad, email: `${unique()}@example.test`, password: PASSWORD },
        });
        assertError(res, 400, 'E4001', /^username: /);
      }
    });

    test('email must be valid and username, email and password are required', async () => {
      for (const email of ['not-an-email', 'a@', '@example.test', 'a b@example.test']) {
        assertError(
          await t.request('POST', '/api/users', {
            token: admin,
            body: { username: unique(), email, password: PASSWORD },
          }),
          400,
          'E4001',
          /^email: /,
        );
      }
      for (const field of ['username', 'email', 'password']) {
        const body: Record<string, string> = {
          username: unique(),
          email: `${unique()}@example.test`,
          password: PASSWORD,
        };
        delete body[field];
        assertError(
          await t.request('POST', '/api/users', { token: admin, body }),
          400,
          'E4001',
          new RegExp(`^${field}: `),
        );
      }
    });

    test('password length follows the password_min_length setting, up to 128', async () => {
      const attempt = (password: string) =>
        t.request('POST', '/api/users', {
          token: admin,
          body: { username: unique(), email: `${unique()}@example.test`, password },
        });
      assertError(await attempt('x'.repeat(7)), 400, 'E4001', /^password: /);
      ok(await attempt('x'.repeat(8)), 201);
      ok(await attempt('x'.repeat(128)), 201);
      assertError(await attempt('x'.repeat(129)), 400, 'E4001', /^password: /);

      await putSettings(t, admin, { password_min_length: '12' });
      try {
        assertError(await attempt('x'.repeat(11)), 400, 'E4001', /^password: .*12/);
        ok(await attempt('x'.repeat(12)), 201);
        const user = await createUser(t, admin, { password: 'y'.repeat(12) });
        assertError(
          await t.request('PUT', `/api/users/${user.id}/password`, {
            token: admin,
            body: { password: 'z'.repeat(11) },
          }),
          400,
          'E4001',
          /^password: /,
        );
      } finally {
        await putSettings(t, admin, { password_min_length: '8' });
      }
      ok(await attempt('x'.repeat(8)), 201);
    });

    test('duplicate username or email → 400 E4001, case-insensitively; a deleted user frees both', async () => {
      const name = unique('Dup');
      const first = await createUser(t, admin, { username: name, email: `${name}@Example.test` });
      const again = (username: string, email: string) =>
        t.request('POST', '/api/users', { token: admin, body: { username, email, password: PASSWORD } });
      assertError(await again(name.toLowerCase(), `${unique()}@example.test`), 400, 'E4001', 'username already exists');
      assertError(await again(unique(), `${name.toUpperCase()}@EXAMPLE.TEST`), 400, 'E4001', /email already exists/);

      ok(await t.request('DELETE', `/api/users/${first.id}`, { token: admin }));
      const reborn = ok(await again(name, `${name}@example.test`), 201);
      assert.notEqual(reborn.id, first.id);
      assertError(await t.request('GET', `/api/users/${first.id}`, { token: admin }), 404, 'E4041');
    });

    test('list: envelope, defaults and bounds of current and page_size', async () => {
      await assertPaginationRules(t, admin, '/api/users');
      const all = await list('page_size=100');
      assert.ok(all.body.total >= 1);
      assert.deepEqual(Object.keys(all.body.data[0]).sort(), USER_KEYS);
    });

    test('list: newest first, paged, search case-insensitive on username and email', async () => {
      const marker = unique('m');
      const created: { id: string }[] = [];
      for (const [i, email] of [`a${marker}@example.test`, `b@${marker}.example.test`, `c@example.test`].entries()) {
        created.push(
          await createUser(t, admin, {
            username: i === 2 ? `x${marker}` : unique(),
            email: i === 2 ? `${unique()}@example.test` : email,
          }),
        );
        await sleep(5);
      }
      const newestFirst = created.map((u) => u.id).reverse();
      const found = await list(`search=${marker.toUpperCase()}`);
      assert.equal(found.body.total, 3);
      assert.deepEqual(
        found.body.data.map((u: { id: string }) => u.id),
        newestFirst,
      );

      const second = await list(`search=${marker}&page_size=2&current=2`);
      assert.equal(second.body.total, 3);
      assert.equal(second.body.current, 2);
      assert.equal(second.body.page_size, 2);
      assert.deepEqual(
        second.body.data.map((u: { id: string }) => u.id),
        newestFirst.slice(2),
      );
      const beyond = await list(`search=${marker}&page_size=2&current=3`);
      assert.equal(beyond.body.total, 3);
      assert.deepEqual(beyond.body.data, []);

      const oldest = newestFirst[2]!;
      ok(await t.request('DELETE', `/api/users/${oldest}`, { token: admin }));
      const afterDelete = await list(`search=${marker}`);
      assert.equal(afterDelete.body.total, 2);
      assert.deepEqual(
        afterDelete.body.data.map((u: { id: string }) => u.id),
        newestFirst.slice(0, 2),
      );

      // A search reads its page apart from the plain list: the users it shows are the same, roles and all.
      const adminOf = (res: { body: { data: { username: string; roles: { name: string }[] }[] } }) =>
        res.body.data.find((u) => u.username === 'admin');
      assert.deepEqual(adminOf(await list('search=ADMIN')), adminOf(await list('page_size=100')));
      assert.deepEqual(
        adminOf(await list('search=admin'))!.roles.map((r) => r.name),
        ['admin'],
      );
    });

    test('list: % and _ in search are taken literally', async () => {
      const marker = unique('w');
      const underscored = await createUser(t, admin, { username: `${marker}_z` });
      await createUser(t, admin, { username: `${marker}xz` });
      const res = await list(`search=${encodeURIComponent(`${marker}_`)}`);
      assert.deepEqual(
        res.body.data.map((u: { id: string }) => u.id),
        [underscored.id],
      );
      assert.equal((await list(`search=${encodeURIComponent('%')}`)).body.total, 0);
      assert.equal((await list(`search=${encodeURIComponent(`${marker}%z`)}`)).body.total, 0);
      assert.equal((await list(`search=${encodeURIComponent('!')}`)).body.total, 0);
    });

    test('list: shows a new user and a lock that ran out at once', async () => {
      const before = await list('page_size=100');
      const user = await createUser(t, admin);
      const afterCreate = await list('page_size=100');
      assert.equal(afterCreate.body.total, before.body.total + 1);
      assert.equal(afterCreate.body.data[0].id, user.id);

      await putSettings(t, admin, { login_failure_attempts: '1' });
      try {
        assertError(
          await t.request('POST', '/api/auth/login', { body: { username: user.username, password: 'wrong-password' } }),
          401,
          'E4011',
        );
      } finally {
        await putSettings(t, admin, { login_failure_attempts: '5' });
      }
      const status = async () =>
        (await list('page_size=100')).body.data.find((u: { id: string }) => u.id === user.id).status;
      // The lock ends in a second; the lists read meanwhile may be kept, but time passing announces nothing.
      await setColumn(t, 'users', user.id, 'locked_until', new Date(Date.now() + 1000));
      await t.c.services.identities.changed('users');
      assert.equal(await status(), 'locked');
      await sleep(1100);
      assert.equal(ok(await t.request('GET', `/api/users/${user.id}`, { token: admin })).status, 'active');
      assert.equal(await status(), 'active');
    });

    test('get, update and delete: a non-UUID id → 400, an unknown id → 404', async () => {
      for (const [method, suffix, body] of [
        ['GET', '', undefined],
        ['PUT', '', { full_name: 'x' }],
        ['DELETE', '', undefined],
        ['PUT', '/password', { password: PASSWORD }],
        ['POST', '/unlock', undefined],
      ] as const) {
        assertError(
          await t.request(method, `/api/users/not-a-uuid${suffix}`, { token: admin, body }),
          400,
          'E4001',
          'id: must be a UUID',
        );
        assertError(await t.request(method, `/api/users/${UNKNOWN_ID}${suffix}`, { token: admin, body }), 404, 'E4041');
      }
    });

    test('update: email stays unique, status active/disabled, role_ids replace the roles', async () => {
      const a = await createUser(t, admin);
      const b = await createUser(t, admin);
      const put = (id: string, body: unknown) => t.request('PUT', `/api/users/${id}`, { token: admin, body });
      assertError(await put(a.id, { email: b.email.toUpperCase() }), 400, 'E4001', /email already exists/);
      assert.equal(ok(await put(a.id, { email: a.email.toUpperCase() })).email, a.email.toUpperCase());
      const renamed = ok(await put(a.id, { email: `${unique()}@example.test`, full_name: 'Renamed' }));
      assert.equal(renamed.full_name, 'Renamed');
      assert.ok(Date.parse(renamed.updated_at) >= Date.parse(a.updated_at));
      ok(await put(b.id, { email: a.email }));

      for (const status of ['locked', 'gone', 1]) assertError(await put(a.id, { status }), 400, 'E4001', /^status: /);
      assertError(await put(a.id, { role_ids: ['nope'] }), 400, 'E4001', /^role_ids/);
      assertError(await put(a.id, { role_ids: [UNKNOWN_ID] }), 400, 'E4001', /^role_ids: /);

      const token = await t.login(a.username, PASSWORD);
      assert.equal(ok(await put(a.id, { status: 'disabled' })).status, 'disabled');
      assertError(await t.request('GET', '/api/auth/me', { token }), 401, 'E4012');
      assertError(
        await t.request('POST', '/api/auth/login', { body: { username: a.username, password: PASSWORD } }),
        401,
        'E4011',
        /disabled/,
      );
      assert.equal(ok(await put(a.id, { status: 'active' })).status, 'active');
      const fresh = await t.login(a.username, PASSWORD);
      // Disabling ended the old session for good; the new login works.
      assertError(await t.request('GET', '/api/auth/me', { token }), 401, 'E4011');
      ok(await t.request('GET', '/api/auth/me', { token: fresh }));

      const r1 = await createRole(t, admin, ['user:list']);
      const r2 = await createRole(t, admin, ['role:list']);
      assert.deepEqual(
        ok(await put(a.id, { role_ids: [r1.id, r2.id, r1.id] }))
          .roles.map((r: { id: string }) => r.id)
          .sort(),
        [r1.id, r2.id].sort(),
      );
      assert.deepEqual(ok(await put(a.id, { role_ids: [r2.id] })).roles, [{ id: r2.id, name: r2.name }]);
      assert.deepEqual(ok(await put(a.id, { full_name: 'keeps roles' })).roles, [{ id: r2.id, name: r2.name }]);
      assert.deepEqual(ok(await put(a.id, { role_ids: [] })).roles, []);
    });

    test('delete is soft: gone from list and GET, its token and login refused', async () => {
      const user = await createUser(t, admin);
      const token = await t.login(user.username, PASSWORD);
      const res = ok(await t.request('DELETE', `/api/users/${user.id}`, { token: admin }));
      assert.equal(typeof res.message, 'string');
      assertError(await t.request('GET', `/api/users/${user.id}`, { token: admin }), 404, 'E4041');
      assertError(await t.request('DELETE', `/api/users/${user.id}`, { token: admin }), 404, 'E4041');
      assertError(
        await t.request('PUT', `/api/users/${user.id}`, { token: admin, body: { full_name: 'x' } }),
        404,
        'E4041',
      );
      assert.equal((await list(`search=${user.username}`)).body.total, 0);
      assertError(await t.request('GET', '/api/auth/me', { token }), 401, 'E4012');
      assertError(
        await t.request('POST', '/api/auth/login', { body: { username: user.username, password: PASSWORD } }),
        401,
        'E4011',
      );
      const row = await t.c.db.knex(t.c.db.t.users).where('id', user.id).first();
      assert.ok(row, 'the row stays');
    });

    test('nobody can delete or disable themselves', async () => {
      const me = ok(await t.request('GET', '/api/auth/me', { token: admin }));
      assertError(await t.request('DELETE', `/api/users/${me.id}`, { token: admin }), 400, 'E4001');
      assertError(
        await t.request('PUT', `/api/users/${me.id}`, { token: admin, body: { status: 'disabled' } }),
        400,
        'E4001',
      );
      const manager = await t.userWith(['user:update', 'user:delete']);
      assertError(await t.request('DELETE', `/api/users/${manager.id}`, { token: manager.token }), 400, 'E4001');
      assertError(
        await t.request('PUT', `/api/users/${manager.id}`, { token: manager.token, body: { status: 'disabled' } }),
        400,
        'E4001',
      );
      ok(await t.request('GET', '/api/auth/me', { token: manager.token }));
    });

    test("privilege escalation: another user's password, email, status, roles or existence only by someone holding all their rights", async () => {
      const me = ok(await t.request('GET', '/api/auth/me', { token: admin }));
      const manager = await t.userWith(['user:update', 'user:list']);
      const strongRole = await createRole(t, admin, ['user:update', 'user:list', 'user:delete']);
      const strong = await createUser(t, admin, { role_ids: [strongRole.id] });
      const weak = await createUser(t, admin);
      const setPassword = (id: string) =>
        t.request('PUT', `/api/users/${id}/password`, { token: manager.token, body: { password: 'taken-over-1' } });
      const setEmail = (id: string) =>
        t.request('PUT', `/api/users/${id}`, { token: manager.token, body: { email: `${unique()}@attacker.test` } });

      const disable = (id: string) =>
        t.request('PUT', `/api/users/${id}`, { token: manager.token, body: { status: 'disabled' } });
      const dropRoles = (id: string) =>
        t.request('PUT', `/api/users/${id}`, { token: manager.token, body: { role_ids: [] } });
      for (const target of [me.id, strong.id]) {
        assertError(await setPassword(target), 403, 'E4031');
        assertError(await setEmail(target), 403, 'E4031');
        assertError(await disable(target), 403, 'E4031');
        assertError(await dropRoles(target), 403, 'E4031');
      }
      const deleter = await t.userWith(['user:delete', 'user:list']);
      assertError(await t.request('DELETE', `/api/users/${strong.id}`, { token: deleter.token }), 403, 'E4031');
      ok(await t.request('GET', `/api/users/${me.id}`, { token: admin }));
      assertError(
        await t.request('POST', '/api/auth/login', { body: { username: 'admin', password: 'taken-over-1' } }),
        401,
        'E4011',
      );
      // Any other change to a stronger user is refused too; any change to a weaker one, or to oneself, is allowed.
      assertError(
        await t.request('PUT', `/api/users/${strong.id}`, {
          token: manager.token,
          body: { full_name: 'Still Strong', email: strong.email },
        }),
        403,
        'E4031',
      );
      ok(
        await t.request('PUT', `/api/users/${manager.id}`, {
          token: manager.token,
          body: { full_name: 'Manager Self' },
        }),
      );
      ok(await setPassword(weak.id));
      ok(await setEmail(weak.id));
      ok(await disable(weak.id));
      ok(
        await t.request('PUT', `/api/users/${strong.id}/password`, {
          token: admin,
          body: { password: 'admin-reset-1' },
        }),
      );
    });

    test('the last active admin cannot be deleted, disabled or lose the admin role', async () => {
      const me = ok(await t.request('GET', '/api/auth/me', { token: admin }));
      const adminRole = me.roles[0];
      // Removing one's own admin role is neither self-delete nor self-disable: only the last-admin guard stops it.
      assertError(
        await t.request('PUT', `/api/users/${me.id}`, { token: admin, body: { role_ids: [] } }),
        400,
        'E4001',
      );
      // Anyone else who could reach the last admin is not an admin, and is refused before the last-admin rule.
      const manager = await t.userWith(['user:update', 'user:delete']);
      assertError(await t.request('DELETE', `/api/users/${me.id}`, { token: manager.token }), 403, 'E4031');
      assertError(
        await t.request('PUT', `/api/users/${me.id}`, { token: manager.token, body: { status: 'disabled' } }),
        403,
        'E4031',
      );
      assertError(
        await t.request('PUT', `/api/users/${me.id}`, { token: manager.token, body: { role_ids: [] } }),
        403,
        'E4031',
      );

      const second = await createUser(t, admin, { role_ids: [adminRole.id] });
      ok(await t.request('PUT', `/api/users/${second.id}`, { token: admin, body: { status: 'disabled' } }));
      // A disabled admin does not count: `admin` is still the last active one.
      assertError(
        await t.request('PUT', `/api/users/${me.id}`, { token: admin, body: { role_ids: [] } }),
        400,
        'E4001',
      );
      ok(await t.request('PUT', `/api/users/${second.id}`, { token: admin, body: { status: 'active' } }));
      // Two active admins: either may lose the role or be disabled, as long as one stays.
      assert.deepEqual(
        ok(await t.request('PUT', `/api/users/${second.id}`, { token: admin, body: { role_ids: [] } })).roles,
        [],
      );
      ok(await t.request('PUT', `/api/users/${second.id}`, { token: admin, body: { role_ids: [adminRole.id] } }));
      ok(await t.request('DELETE', `/api/users/${second.id}`, { token: admin }));
      assertError(
        await t.request('PUT', `/api/users/${me.id}`, { token: admin, body: { role_ids: [] } }),
        400,
        'E4001',
      );
      ok(await t.request('GET', '/api/auth/me', { token: admin }));
    });

    test('two admins removing each other at once leave one of them', async () => {
      // A console of its own: each round leaves a different last admin.
      const own = await startWithAdmin(lane);
      try {
        const me = ok(await own.t.request('GET', '/api/auth/me', { token: own.admin }));
        let current = { id: me.id as string, token: own.admin };
        for (const clash of ['delete', 'disable', 'demote']) {
          const other = await createUser(own.t, current.token, { role_ids: [me.roles[0].id] });
          const otherToken = await own.t.login(other.username, PASSWORD);
          const act = (token: string, id: string) =>
            clash === 'delete'
              ? own.t.request('DELETE', `/api/users/${id}`, { token })
              : own.t.request('PUT', `/api/users/${id}`, {
                  token,
                  body: clash === 'disable' ? { status: 'disabled' } : { role_ids: [] },
                });
          const results = await Promise.all([act(current.token, other.id), act(otherToken, current.id)]);
          // One wins; the other is refused as the last admin, or arrives after its own removal (401, or 403 once demoted).
          const statuses = results.map((r) => r.status);
          assert.equal(
            statuses.filter((s) => s === 200).length,
            1,
            `${clash}: ${results.map((r) => r.text).join(' ')}`,
          );
          assert.ok(
            statuses.every((s) => [200, 400, 401, 403].includes(s)),
            `${clash}: ${statuses}`,
          );
          if (results[1]!.status === 200) current = { id: other.id, token: otherToken };
          ok(await own.t.request('GET', '/api/auth/me', { token: current.token }));
        }
      } finally {
        await own.t.close();
      }
    });
  });
}
