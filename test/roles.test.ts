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
  sleep,
  unique,
  startWithAdmin,
  UNKNOWN_ID,
} from './support/identity.ts';

const ROLE_KEYS = ['created_at', 'description', 'id', 'is_system', 'name', 'org_id', 'permissions', 'updated_at'];

for (const lane of lanes()) {
  describe(`roles [${lane.name}]`, () => {
    let t: TestConsole;
    let admin: string;
    let system: Record<string, { id: string; permissions: string[] }>;
    before(async () => {
      ({ t, admin } = await startWithAdmin(lane));
      const roles = ok(await t.request('GET', '/api/roles?search=&page_size=100', { token: admin }));
      system = Object.fromEntries(
        roles.filter((r: { is_system: boolean }) => r.is_system).map((r: { name: string }) => [r.name, r]),
      );
    });
    after(async () => t.close());

    const get = (id: string, token = admin) => t.request('GET', `/api/roles/${id}`, { token });
    const put = (id: string, body: unknown, token = admin) => t.request('PUT', `/api/roles/${id}`, { token, body });
    const post = (body: unknown, token = admin) => t.request('POST', '/api/roles', { token, body });
    const del = (id: string, token = admin) => t.request('DELETE', `/api/roles/${id}`, { token });

    test('the system roles exist: admin holds everything, viewer only list and view codes', async () => {
      assert.deepEqual(Object.keys(system).sort(), ['admin', 'operator', 'viewer']);
      const catalogue = ok(await t.request('GET', '/api/permissions', { token: admin })).map(
        (p: { code: string }) => p.code,
      );
      assert.deepEqual([...system.admin!.permissions].sort(), [...catalogue].sort());
      assert.ok(system.viewer!.permissions.length > 0);
      assert.ok(
        system.viewer!.permissions.every((p) => /:(list|view)$/.test(p)),
        system.viewer!.permissions.join(),
      );
      assert.ok(
        !system.operator!.permissions.some(
          (p) => p.endsWith(':delete') || p === 'system:settings:update' || p.startsWith('org:'),
        ),
      );
      assert.ok(system.operator!.permissions.includes('user:create'));
    });

    test('create answers 201 with id, is_system and timestamps; get, list and search find it', async () => {
      const name = unique('Ops');
      const role = ok(
        await post({ name, description: 'Runs things', permissions: ['user:view', 'user:list', 'user:list'] }),
        201,
      );
      assert.deepEqual(Object.keys(role).sort(), ROLE_KEYS);
      assert.equal(role.name, name);
      assert.equal(role.description, 'Runs things');
      assert.deepEqual(role.permissions, ['user:list', 'user:view']);
      assert.equal(role.is_system, false);
      assert.match(role.created_at, /Z$/);
      assert.deepEqual(ok(await get(role.id)), role);

      const minimal = ok(await post({ name: unique('min') }), 201);
      assert.equal(minimal.description, '');
      assert.deepEqual(minimal.permissions, []);

      await sleep(5);
      const later = await createRole(t, admin, [], `${name}-b`);
      const found = await t.request('GET', `/api/roles?search=${name.toLowerCase()}`, { token: admin });
      assert.equal(found.body.total, 2);
      assert.deepEqual(
        found.body.data.map((r: { id: string }) => r.id),
        [later.id, role.id],
      );
      assert.equal(
        (await t.request('GET', `/api/roles?search=${encodeURIComponent('%')}`, { token: admin })).body.total,
        0,
      );
    });

    test('list: envelope, defaults and bounds; a new role shows at once', async () => {
      await assertPaginationRules(t, admin, '/api/roles');
      const before = await t.request('GET', '/api/roles?page_size=100', { token: admin });
      const role = await createRole(t, admin, []);
      const after = await t.request('GET', '/api/roles?page_size=100', { token: admin });
      assert.equal(after.body.total, before.body.total + 1);
      assert.equal(after.body.data[0].id, role.id);
    });

    test('validation: names required and unique, permissions from the catalogue', async () => {
      const name = unique('dup');
      await createRole(t, admin, [], name);
      assertError(await post({ name }), 400, 'E4001', /already exists/);
      assertError(await post({ name: name.toUpperCase() }), 400, 'E4001', /already exists/);
      assertError(await post({ name: `  ${name}  ` }), 400, 'E4001', /already exists/);
      assertError(await post({ description: 'x' }), 400, 'E4001', /^name: /);
      assertError(await post({ name: '   ' }), 400, 'E4001', /^name: /);
      assertError(await post({ name: 'x'.repeat(65) }), 400, 'E4001', /^name: /);
      assertError(await post({ name: unique(), permissions: ['user:list', 'user:fly'] }), 400, 'E4001', /user:fly/);
      assertError(await post({ name: unique(), permissions: 'user:list' }), 400, 'E4001', /^permissions: /);

      const other = await createRole(t, admin, []);
      assertError(await put(other.id, { name }), 400, 'E4001', /already exists/);
      assertError(await put(other.id, { permissions: ['nope:nope'] }), 400, 'E4001', /nope:nope/);
      assertError(await put('not-a-uuid', { description: 'x' }), 400, 'E4001', 'id: must be a UUID');
      assertError(await put(UNKNOWN_ID, { description: 'x' }), 404, 'E4041');
      assertError(await get('not-a-uuid'), 400, 'E4001', 'id: must be a UUID');
      assertError(await get(UNKNOWN_ID), 404, 'E4041');
      assertError(await del('not-a-uuid'), 400, 'E4001', 'id: must be a UUID');
      assertError(await del(UNKNOWN_ID), 404, 'E4041');
    });

    test('update: name, description, and permissions replacing the set', async () => {
      const role = await createRole(t, admin, ['user:list', 'user:view']);
      const renamed = ok(await put(role.id, { name: `${role.name}-new`, description: 'changed' }));
      assert.equal(renamed.name, `${role.name}-new`);
      assert.equal(renamed.description, 'changed');
      assert.deepEqual(renamed.permissions, ['user:list', 'user:view']);
      assert.deepEqual(ok(await put(role.id, { permissions: ['role:list'] })).permissions, ['role:list']);
      assert.deepEqual(ok(await put(role.id, { permissions: [] })).permissions, []);
      // Keeping its own name is not a clash.
      ok(await put(role.id, { name: `${role.name}-new` }));
    });

    test('system roles cannot be deleted or renamed; admin keeps every permission', async () => {
      for (const [name, role] of Object.entries(system)) {
        assertError(await del(role.id), 400, 'E4001');
        assertError(await put(role.id, { name: `${name}2` }), 400, 'E4001');
        assert.equal(ok(await get(role.id)).name, name);
      }
      assertError(await put(system.admin!.id, { permissions: ['user:list'] }), 400, 'E4001');
      const viewer = ok(await put(system.viewer!.id, { name: 'viewer', description: 'Read only, edited' }));
      assert.equal(viewer.description, 'Read only, edited');
      assert.equal(viewer.is_system, true);
    });

    test('a role held by a live user cannot be deleted; one held only by a deleted user can', async () => {
      const role = await createRole(t, admin, ['user:list']);
      const user = await createUser(t, admin, { role_ids: [role.id] });
      assertError(await del(role.id), 400, 'E4001');
      ok(await t.request('DELETE', `/api/users/${user.id}`, { token: admin }));
      assert.equal(typeof ok(await del(role.id)).message, 'string');
      assertError(await get(role.id), 404, 'E4041');
      assert.equal((await t.request('GET', `/api/roles?search=${role.name}`, { token: admin })).body.total, 0);

      const unused = await createRole(t, admin, []);
      ok(await del(unused.id));
      assertError(await del(unused.id), 404, 'E4041');
    });

    test("a change to a role applies to its holders' next request", async () => {
      const role = await createRole(t, admin, ['user:list']);
      const user = await createUser(t, admin, { role_ids: [role.id] });
      const token = await t.login(user.username, PASSWORD);
      const listUsers = () => t.request('GET', '/api/users', { token });
      ok(await listUsers());
      ok(await put(role.id, { permissions: ['role:list'] }));
      assertError(await listUsers(), 403, 'E4031');
      ok(await t.request('GET', '/api/roles', { token }));
      ok(await put(role.id, { permissions: ['role:list', 'user:list'] }));
      ok(await listUsers());
      ok(await t.request('PUT', `/api/users/${user.id}`, { token: admin, body: { role_ids: [] } }));
      assertError(await listUsers(), 403, 'E4031');
      ok(await t.request('PUT', `/api/users/${user.id}`, { token: admin, body: { role_ids: [system.viewer!.id] } }));
      ok(await listUsers());
      assert.deepEqual(
        ok(await t.request('GET', '/api/auth/me', { token })).roles.map((r: { name: string }) => r.name),
        ['viewer'],
      );
    });

    test('privilege escalation: roles can carry only permissions their editor holds', async () => {
      const editor = await t.userWith(['role:create', 'role:update', 'role:list', 'user:list']);
      assertError(
        await post({ name: unique(), permissions: ['user:list', 'user:delete'] }, editor.token),
        403,
        'E4031',
        /user:delete/,
      );
      const own = ok(await post({ name: unique(), permissions: ['user:list'] }, editor.token), 201);
      assertError(
        await put(own.id, { permissions: ['user:list', 'system:settings:update'] }, editor.token),
        403,
        'E4031',
      );
      assert.deepEqual(ok(await get(own.id)).permissions, ['user:list']);
      ok(await put(own.id, { permissions: ['role:list'] }, editor.token));

      // A role carrying a permission its editor lacks is out of their reach altogether, its description too.
      const strong = await createRole(t, admin, ['user:delete', 'user:list']);
      assertError(await put(strong.id, { description: 'edited' }, editor.token), 403, 'E4031', /user:delete/);
      assertError(await put(strong.id, { permissions: ['user:list'] }, editor.token), 403, 'E4031', /user:delete/);
      const unchanged = ok(await get(strong.id));
      assert.equal(unchanged.description, '');
      assert.deepEqual(unchanged.permissions, ['user:delete', 'user:list']);

      assertError(
        await put(system.operator!.id, { permissions: [...system.operator!.permissions, 'role:delete'] }, editor.token),
        403,
        'E4031',
      );
      assertError(await post({ name: 'admin', permissions: [] }, editor.token), 403, 'E4031');
    });

    test('privilege escalation: roles can be assigned only by someone holding their permissions; admin by admins', async () => {
      const small = await createRole(t, admin, ['user:list']);
      const strong = await createRole(t, admin, ['user:list', 'user:delete']);
      const manager = await t.userWith(['user:create', 'user:update', 'user:list']);
      const target = await createUser(t, admin);
      const assign = (roleIds: string[], token = manager.token) =>
        t.request('PUT', `/api/users/${target.id}`, { token, body: { role_ids: roleIds } });

      assertError(await assign([strong.id]), 403, 'E4031', /user:delete/);
      assertError(await assign([system.admin!.id]), 403, 'E4031');
      assertError(
        await t.request('PUT', `/api/users/${manager.id}`, {
          token: manager.token,
          body: { role_ids: [system.admin!.id] },
        }),
        403,
        'E4031',
      );
      assertError(
        await t.request('POST', '/api/users', {
          token: manager.token,
          body: { username: unique(), email: `${unique()}@example.test`, password: PASSWORD, role_ids: [strong.id] },
        }),
        403,
        'E4031',
      );
      assert.deepEqual(ok(await t.request('GET', `/api/users/${target.id}`, { token: admin })).roles, []);

      assert.deepEqual(ok(await assign([small.id])).roles, [{ id: small.id, name: small.name }]);
      // Once the user holds a permission the manager lacks, the manager can change nothing of theirs.
      ok(await assign([small.id, strong.id], admin));
      assertError(await assign([small.id, strong.id]), 403, 'E4031');
      assertError(await assign([strong.id]), 403, 'E4031');
      ok(await assign([strong.id], admin));

      const promoted = ok(await assign([system.admin!.id], admin));
      assert.deepEqual(
        promoted.roles.map((r: { name: string }) => r.name),
        ['admin'],
      );
      const promotedToken = await t.login(target.username, PASSWORD);
      ok(await t.request('DELETE', `/api/roles/${small.id}`, { token: promotedToken }));
    });
  });
}
