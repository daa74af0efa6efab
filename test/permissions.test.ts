import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { appRouter } from '../routers/app-router.ts';
import { restRoutes } from '../server/http/rest-adapter.ts';
import { lanes, type TestConsole } from './support/harness.ts';
import {
  assertError,
  createRole,
  createUser,
  ok,
  PASSWORD,
  unique,
  startWithAdmin,
  UNKNOWN_ID,
} from './support/identity.ts';

// The documented permission codes plus the identity catalogue (routers/permissions/service.ts).
const EXPECTED_CODES = [
  'user:create',
  'system:settings:view',
  'system:settings:update',
  'task:list',
  'task:view',
  'task:cancel',
  'task:retry',
  'task:delete',
  'task:schedule:list',
  'task:schedule:update',
  'user:list',
  'user:view',
  'user:update',
  'user:delete',
  'user:export',
  'role:list',
  'role:view',
  'role:create',
  'role:update',
  'role:delete',
  'permission:list',
  'audit_log:list',
];

const routes = restRoutes(appRouter).map((r) => ({ ...r, concrete: r.url.replace(/:\w+/g, UNKNOWN_ID) }));

for (const lane of lanes()) {
  describe(`permissions [${lane.name}]`, () => {
    let t: TestConsole;
    let admin: string;
    before(async () => ({ t, admin } = await startWithAdmin(lane)));
    after(async () => t.close());

    const catalogue = async (token = admin) =>
      ok<{ code: string; name: string; module: string }[]>(await t.request('GET', '/api/permissions', { token }));

    test('GET /permissions answers a plain data array of {code, name, module}', async () => {
      const res = await t.request('GET', '/api/permissions', { token: admin });
      assert.equal(res.status, 200);
      assert.deepEqual(Object.keys(res.body).sort(), ['code', 'data']);
      const list = res.body.data as { code: string; name: string; module: string }[];
      for (const p of list) {
        assert.deepEqual(Object.keys(p).sort(), ['code', 'module', 'name']);
        assert.match(p.code, /^[a-z_]+(:[a-z_]+){1,2}$/);
        assert.ok(p.name.length > 0 && p.module.length > 0, p.code);
      }
      const codes = list.map((p) => p.code);
      assert.equal(new Set(codes).size, codes.length, 'codes are unique');
      for (const code of EXPECTED_CODES) assert.ok(codes.includes(code), code);
      assert.equal(list.find((p) => p.code === 'user:create')?.module, 'Users');
      // Query parameters of list endpoints mean nothing here and change nothing.
      assert.deepEqual(ok(await t.request('GET', '/api/permissions?page_size=1', { token: admin })), list);
    });

    test('GET /permissions?scope=organization keeps the codes an organization role may hold', async () => {
      const res = await t.request('GET', '/api/permissions?scope=organization', { token: admin });
      const codes = ok<{ code: string }[]>(res).map((p) => p.code);
      assert.ok(codes.includes('task:list') && codes.includes('org:member:update'));
      assert.ok(!codes.includes('user:list') && !codes.includes('role:create'));
      // Each one is accepted in an organization's role.
      const org = ok(
        await t.request('POST', '/api/organizations', { token: admin, body: { name: unique('org') } }),
        201,
      );
      const role = ok(
        await t.request('POST', '/api/roles', {
          token: admin,
          body: { name: unique('r'), permissions: codes, org_id: org.id },
        }),
        201,
      );
      assert.deepEqual(role.permissions, [...codes].sort());
      assertError(await t.request('GET', '/api/permissions?scope=global', { token: admin }), 400, 'E4001', /scope/);
    });

    test('GET /permissions needs permission:list', async () => {
      const holder = await t.userWith(['permission:list']);
      assert.ok((await catalogue(holder.token)).length > 0);
      const other = await t.userWith(['user:list']);
      assertError(await t.request('GET', '/api/permissions', { token: other.token }), 403, 'E4031', /permission:list/);
    });

    test('an application permission appears once registered and can be put into a role', async () => {
      assertError(
        await t.request('POST', '/api/roles', {
          token: admin,
          body: { name: unique('r'), permissions: ['report:run'] },
        }),
        400,
        'E4001',
        /report:run/,
      );
      t.c.permissions.register({ code: 'report:run', name: 'Run reports', module: 'Reports' });
      assert.deepEqual(
        (await catalogue()).find((p) => p.code === 'report:run'),
        { code: 'report:run', name: 'Run reports', module: 'Reports' },
      );

      const role = await createRole(t, admin, ['report:run', 'user:list']);
      assert.deepEqual(role.permissions, ['report:run', 'user:list']);
      const user = await createUser(t, admin, { role_ids: [role.id] });
      const token = await t.login(user.username, PASSWORD);
      const me = ok(await t.request('GET', '/api/auth/me', { token }));
      assert.deepEqual(me.permissions, ['report:run', 'user:list']);
      assert.ok(
        ok(await t.request('GET', '/api/auth/me', { token: admin })).permissions.includes('report:run'),
        'admins hold it too',
      );

      // A holder may pass it on; someone without it may not.
      const grantor = await t.userWith(['role:create', 'report:run']);
      ok(
        await t.request('POST', '/api/roles', {
          token: grantor.token,
          body: { name: unique('r'), permissions: ['report:run'] },
        }),
        201,
      );
      const stranger = await t.userWith(['role:create']);
      assertError(
        await t.request('POST', '/api/roles', {
          token: stranger.token,
          body: { name: unique('r'), permissions: ['report:run'] },
        }),
        403,
        'E4031',
        /report:run/,
      );
    });

    test('register rejects a malformed permission', () => {
      for (const bad of [
        { code: 'Report Run', name: 'x', module: 'x' },
        { code: 'report', name: 'x', module: 'x' },
        { code: 'report:run:now:later', name: 'x', module: 'x' },
        { code: 'report:x', name: '', module: 'x' },
      ]) {
        assert.throws(() => t.c.permissions.register(bad));
      }
    });

    test('every guarded route answers 401 E4011 without a token', async () => {
      const guarded = routes.filter((r) => !r.meta.public);
      assert.ok(guarded.length >= 15, `only ${guarded.length} routes`);
      for (const route of guarded) {
        for (const headers of [{}, { authorization: 'Bearer not-a-token' }] as Record<string, string>[]) {
          const res = await t.request(route.method, `/api${route.concrete}`, { headers });
          assert.equal(res.status, 401, `${route.method} ${route.url}: ${res.status} ${res.text}`);
          assert.equal(res.body.code, 'E4011', `${route.method} ${route.url}`);
        }
      }
      const login = routes.find((r) => r.url === '/auth/login');
      assert.ok(login?.meta.public);
    });

    test('every route that needs a permission answers 403 E4031 to a user without it', async () => {
      const nobody = await t.userWith([]);
      const needing = routes.filter((r) => r.meta.permission);
      assert.ok(needing.length >= 15, `only ${needing.length} routes`);
      for (const route of needing) {
        const res = await t.request(route.method, `/api${route.concrete}`, {
          token: nobody.token,
          body: route.method === 'GET' || route.method === 'DELETE' ? undefined : {},
        });
        assert.equal(res.status, 403, `${route.method} ${route.url}: ${res.status} ${res.text}`);
        assert.equal(res.body.code, 'E4031', `${route.method} ${route.url}`);
      }
      // Routes for any logged-in user let them in.
      ok(await t.request('GET', '/api/auth/me', { token: nobody.token }));
      ok(await t.request('POST', '/api/auth/refresh', { token: nobody.token }));
    });
  });
}
