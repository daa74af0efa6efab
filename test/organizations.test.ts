import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { lanes, startConsole, testConfig, type TestConsole } from './support/harness.ts';
import {
  assertError,
  assertPaginationRules,
  createRole,
  createUser,
  ok,
  PASSWORD,
  sleep,
  startWithAdmin,
  unique,
  UNKNOWN_ID,
} from './support/identity.ts';
import { installBefore } from './support/old-install.ts';

const ORG_KEYS = ['created_at', 'description', 'id', 'members', 'name', 'status', 'updated_at'];

for (const lane of lanes()) {
  describe(`organizations [${lane.name}]`, () => {
    let t: TestConsole;
    let admin: string;
    before(async () => {
      ({ t, admin } = await startWithAdmin(lane));
    });
    after(async () => t.close());

    const inOrg = (orgId: string) => ({ 'x-scope-orgid': orgId });
    const createOrg = async (body: Record<string, unknown> = {}) =>
      ok(await t.request('POST', '/api/organizations', { token: admin, body: { name: unique('org'), ...body } }), 201);
    const orgRole = async (orgId: string, permissions: string[], name = unique('orgrole')) =>
      ok(await t.request('POST', '/api/roles', { token: admin, body: { name, permissions, org_id: orgId } }), 201);
    const putMember = (orgId: string, userId: string, roleIds: string[], token = admin) =>
      t.request('PUT', `/api/organizations/${orgId}/members`, { token, body: { user_id: userId, role_ids: roleIds } });
    /** A user holding no global permission, logged in. */
    const plainUser = async () => {
      const user = await createUser(t, admin);
      return { ...user, token: await t.login(user.username, PASSWORD) };
    };
    const audits = async (query: string) =>
      ok<any[]>(await t.request('GET', `/api/audit-logs?page_size=100&${query}`, { token: admin }));

    test('create answers 201 with the organization; get, list and search find it', async () => {
      const name = unique('Acme');
      const org = await createOrg({ name, description: 'Widgets' });
      assert.deepEqual(Object.keys(org).sort(), ORG_KEYS);
      assert.equal(org.name, name);
      assert.equal(org.description, 'Widgets');
      assert.equal(org.status, 'active');
      assert.deepEqual(org.members, []);
      assert.match(org.created_at, /Z$/);
      assert.deepEqual(ok(await t.request('GET', `/api/organizations/${org.id}`, { token: admin })), org);

      const found = await t.request('GET', `/api/organizations?search=${name.toLowerCase()}`, { token: admin });
      assert.equal(found.body.total, 1);
      assert.deepEqual(
        Object.keys(found.body.data[0]).sort(),
        ORG_KEYS.filter((k) => k !== 'members'),
      );
      assert.equal(found.body.data[0].id, org.id);
      await assertPaginationRules(t, admin, '/api/organizations');

      const created = await audits(`resource_type=organization&action=create`);
      assert.ok(created.some((r) => r.resource_id === org.id && r.details.after.name === name));
    });

    test('validation: names required and unique among live organizations; ids are UUIDs', async () => {
      const org = await createOrg();
      const post = (body: unknown) => t.request('POST', '/api/organizations', { token: admin, body });
      assertError(await post({ name: org.name }), 400, 'E4001', /already exists/);
      assertError(await post({ name: org.name.toUpperCase() }), 400, 'E4001', /already exists/);
      assertError(await post({ description: 'x' }), 400, 'E4001', /^name: /);
      assertError(await post({ name: '  ' }), 400, 'E4001', /^name: /);
      assertError(await post({ name: 'x'.repeat(129) }), 400, 'E4001', /^name: /);
      assertError(await post({ name: unique(), status: 'sleeping' }), 400, 'E4001', /^status: /);

      const other = await createOrg();
      assertError(
        await t.request('PUT', `/api/organizations/${other.id}`, { token: admin, body: { name: org.name } }),
        400,
        'E4001',
        /already exists/,
      );
      for (const method of ['GET', 'PUT', 'DELETE']) {
        assertError(
          await t.request(method, '/api/organizations/not-a-uuid', {
            token: admin,
            body: method === 'PUT' ? {} : undefined,
          }),
          400,
          'E4001',
          'id: must be a UUID',
        );
        assertError(
          await t.request(method, `/api/organizations/${UNKNOWN_ID}`, {
            token: admin,
            body: method === 'PUT' ? {} : undefined,
          }),
          404,
          'E4041',
        );
      }
    });

    test('update changes name, description and status and is audited with before and after', async () => {
      const org = await createOrg();
      const renamed = ok(
        await t.request('PUT', `/api/organizations/${org.id}`, {
          token: admin,
          body: { name: `${org.name}-new`, description: 'changed', status: 'disabled' },
        }),
      );
      assert.equal(renamed.name, `${org.name}-new`);
      assert.equal(renamed.description, 'changed');
      assert.equal(renamed.status, 'disabled');
      // Keeping its own name (in another case) is not a clash.
      ok(await t.request('PUT', `/api/organizations/${org.id}`, { token: admin, body: { name: `${org.name}-NEW` } }));
      const records = (await audits(`resource_type=organization&action=update`)).filter(
        (r) => r.resource_id === org.id,
      );
      assert.equal(records.length, 2);
      assert.deepEqual([records[1].details.before.status, records[1].details.after.status], ['active', 'disabled']);
      assert.deepEqual(
        [records[0].details.before.name, records[0].details.after.name],
        [`${org.name}-new`, `${org.name}-NEW`],
      );
    });

    test('delete is soft: the organization disappears, its name is free again, its roles and memberships go', async () => {
      const org = await createOrg();
      const role = await orgRole(org.id, ['task:list']);
      const member = await plainUser();
      ok(await putMember(org.id, member.id, [role.id]));
      ok(await t.request('GET', '/api/tasks', { token: member.token, headers: inOrg(org.id) }));

      assert.equal(
        typeof ok(await t.request('DELETE', `/api/organizations/${org.id}`, { token: admin })).message,
        'string',
      );
      assertError(await t.request('GET', `/api/organizations/${org.id}`, { token: admin }), 404, 'E4041');
      assertError(await t.request('DELETE', `/api/organizations/${org.id}`, { token: admin }), 404, 'E4041');
      assert.equal((await t.request('GET', `/api/organizations?search=${org.name}`, { token: admin })).body.total, 0);
      assertError(await t.request('GET', `/api/roles/${role.id}`, { token: admin }), 404, 'E4041');
      // The former member's header now names no organization.
      assertError(await t.request('GET', '/api/tasks', { token: member.token, headers: inOrg(org.id) }), 404, 'E4041');
      const again = await createOrg({ name: org.name });
      assert.notEqual(again.id, org.id);

      const deleted = (await audits(`resource_type=organization&action=delete`)).find((r) => r.resource_id === org.id);
      assert.equal(deleted?.details.before.members.length, 1);
    });

    test('members hold roles of their organization only; global roles are assigned on users only', async () => {
      const org = await createOrg();
      const other = await createOrg();
      const role = await orgRole(org.id, ['task:list']);
      const foreign = await orgRole(other.id, ['task:list']);
      const global = await createRole(t, admin, ['user:list']);
      assert.equal(role.org_id, org.id);
      assert.equal(global.org_id, null);
      const user = await createUser(t, admin);

      const added = ok(await putMember(org.id, user.id, [role.id, role.id]));
      assert.deepEqual(
        added.members.map((m: any) => ({ user_id: m.user_id, username: m.username, roles: m.roles })),
        [{ user_id: user.id, username: user.username, roles: [{ id: role.id, name: role.name }] }],
      );
      assert.deepEqual(ok(await putMember(org.id, user.id, [])).members[0].roles, []);

      assertError(await putMember(org.id, user.id, [global.id]), 400, 'E4001', /^role_ids: /);
      assertError(await putMember(org.id, user.id, [foreign.id]), 400, 'E4001', /^role_ids: /);
      assertError(await putMember(org.id, user.id, [UNKNOWN_ID]), 400, 'E4001', /^role_ids: /);
      assertError(await putMember(org.id, UNKNOWN_ID, []), 400, 'E4001', /^user_id: /);
      assertError(await putMember(org.id, 'nope', []), 400, 'E4001', /^user_id: /);
      assertError(await putMember(UNKNOWN_ID, user.id, []), 404, 'E4041');
      assertError(
        await t.request('PUT', `/api/users/${user.id}`, { token: admin, body: { role_ids: [role.id] } }),
        400,
        'E4001',
        /^role_ids: /,
      );
      assertError(
        await t.request('POST', '/api/users', {
          token: admin,
          body: { username: unique(), email: `${unique()}@example.test`, password: PASSWORD, role_ids: [role.id] },
        }),
        400,
        'E4001',
        /^role_ids: /,
      );

      // A role held by a member cannot be deleted; once the membership ends it can.
      ok(await putMember(org.id, user.id, [role.id]));
      assertError(await t.request('DELETE', `/api/roles/${role.id}`, { token: admin }), 400, 'E4001');
      ok(await t.request('DELETE', `/api/organizations/${org.id}/members/${user.id}`, { token: admin }));
      assertError(
        await t.request('DELETE', `/api/organizations/${org.id}/members/${user.id}`, { token: admin }),
        404,
        'E4041',
      );
      assertError(
        await t.request('DELETE', `/api/organizations/${org.id}/members/not-a-uuid`, { token: admin }),
        400,
        'E4001',
        /^userId: /,
      );
      assert.deepEqual(ok(await t.request('GET', `/api/organizations/${org.id}`, { token: admin })).members, []);
      ok(await t.request('DELETE', `/api/roles/${role.id}`, { token: admin }));

      const changes = (await audits(`resource_type=organization&action=update`)).filter(
        (r) => r.resource_id === org.id && r.details.member?.user_id === user.id,
      );
      assert.ok(
        changes.some((r) => r.details.before === null && r.details.after.roles[0].id === role.id),
        'joining is audited',
      );
      assert.ok(
        changes.some((r) => r.details.after === null),
        'leaving is audited',
      );
    });

    test('role names are unique within their scope; roles list by organization', async () => {
      const a = await createOrg();
      const b = await createOrg();
      const name = unique('Editors');
      const inA = await orgRole(a.id, [], name);
      const inB = await orgRole(b.id, [], name.toUpperCase());
      const global = await createRole(t, admin, [], name.toLowerCase());
      assertError(
        await t.request('POST', '/api/roles', { token: admin, body: { name, org_id: a.id } }),
        400,
        'E4001',
        /already exists/,
      );
      const another = await createRole(t, admin, []);
      assertError(
        await t.request('PUT', `/api/roles/${another.id}`, { token: admin, body: { name: name.toUpperCase() } }),
        400,
        'E4001',
        /already exists/,
      );
      // Another organization's role may take the very name.
      assert.equal(ok(await t.request('PUT', `/api/roles/${inB.id}`, { token: admin, body: { name } })).name, name);
      assertError(
        await t.request('POST', '/api/roles', { token: admin, body: { name: unique(), org_id: UNKNOWN_ID } }),
        400,
        'E4001',
        /^org_id: /,
      );
      assertError(
        await t.request('POST', '/api/roles', { token: admin, body: { name: unique(), org_id: 'x' } }),
        400,
        'E4001',
        /^org_id: /,
      );
      assertError(await t.request('GET', '/api/roles?org_id=x', { token: admin }), 400, 'E4001', /^org_id: /);

      const ofA = await t.request('GET', `/api/roles?org_id=${a.id}`, { token: admin });
      assert.deepEqual(
        ofA.body.data.map((r: any) => r.id),
        [inA.id],
      );
      const all = ok<any[]>(await t.request('GET', `/api/roles?search=${name}`, { token: admin }));
      assert.deepEqual(all.map((r) => r.id).sort(), [inA.id, inB.id, global.id].sort());
      // Acting in A: the global roles and A's, not B's.
      const usable = ok<any[]>(
        await t.request('GET', `/api/roles?search=${name}`, { token: admin, headers: inOrg(a.id) }),
      );
      assert.deepEqual(usable.map((r) => r.id).sort(), [inA.id, global.id].sort());
      assertError(await t.request('GET', `/api/roles/${inB.id}`, { token: admin, headers: inOrg(a.id) }), 404, 'E4041');
    });

    test("a permission granted by an organization's role works with that organization's header only", async () => {
      const a = await createOrg();
      const b = await createOrg();
      const c = await createOrg();
      const lister = await orgRole(a.id, ['task:list']);
      const user = await plainUser();
      ok(await putMember(a.id, user.id, [lister.id]));
      ok(await putMember(b.id, user.id, []));
      const listTasks = (headers?: Record<string, string>) =>
        t.request('GET', '/api/tasks', { token: user.token, headers });

      assertError(await listTasks(), 403, 'E4031');
      ok(await listTasks(inOrg(a.id)));
      ok(await listTasks(inOrg(a.id.toUpperCase())));
      assertError(await listTasks(inOrg(b.id)), 403, 'E4031');
      assertError(await listTasks(inOrg(c.id)), 403, 'E4031');
      assertError(await listTasks(inOrg(UNKNOWN_ID)), 404, 'E4041');
      assertError(await listTasks(inOrg('not-a-uuid')), 400, 'E4001', 'X-Scope-OrgID: must be a UUID');
      // Login-only routes check the header as well.
      ok(await t.request('GET', '/api/auth/me', { token: user.token, headers: inOrg(b.id) }));
      assertError(await t.request('GET', '/api/auth/me', { token: user.token, headers: inOrg(c.id) }), 403, 'E4031');
      // An empty header is no header.
      assertError(await listTasks({ 'x-scope-orgid': '' }), 403, 'E4031');
      // Without a token the answer is 401 whatever the header says.
      assertError(await t.request('GET', '/api/users', { headers: inOrg('not-a-uuid') }), 401, 'E4011');

      // Changes apply to the next request: the role's permissions, the membership, the organization's status.
      ok(await t.request('PUT', `/api/roles/${lister.id}`, { token: admin, body: { permissions: ['role:list'] } }));
      assertError(await listTasks(inOrg(a.id)), 403, 'E4031');
      ok(await t.request('GET', '/api/roles', { token: user.token, headers: inOrg(a.id) }));
      ok(await t.request('PUT', `/api/roles/${lister.id}`, { token: admin, body: { permissions: ['task:list'] } }));
      ok(await listTasks(inOrg(a.id)));
      ok(await t.request('PUT', `/api/organizations/${a.id}`, { token: admin, body: { status: 'disabled' } }));
      assertError(await listTasks(inOrg(a.id)), 403, 'E4031');
      ok(await t.request('PUT', `/api/organizations/${a.id}`, { token: admin, body: { status: 'active' } }));
      ok(await listTasks(inOrg(a.id)));
      ok(await putMember(a.id, user.id, []));
      assertError(await listTasks(inOrg(a.id)), 403, 'E4031');
      ok(await t.request('DELETE', `/api/organizations/${a.id}/members/${user.id}`, { token: admin }));
      assertError(await t.request('GET', '/api/auth/me', { token: user.token, headers: inOrg(a.id) }), 403, 'E4031');

      // /trpc reads the header too.
      ok(await putMember(a.id, user.id, [lister.id]));
      const trpcList = `/trpc/tasks.list?input=${encodeURIComponent('{}')}`;
      assert.equal((await t.request('GET', trpcList, { token: user.token })).status, 403);
      assert.equal((await t.request('GET', trpcList, { token: user.token, headers: inOrg(a.id) })).status, 200);
    });

    test("GET /auth/me with an organization's header answers the permissions held there, its roles' too", async () => {
      const a = await createOrg();
      const b = await createOrg();
      const lister = await orgRole(a.id, ['task:list', 'task:view']);
      const user = await plainUser();
      ok(await putMember(a.id, user.id, [lister.id]));
      ok(await putMember(b.id, user.id, []));
      const me = async (headers?: Record<string, string>) =>
        ok<{ permissions: string[]; roles: unknown[] }>(
          await t.request('GET', '/api/auth/me', { token: user.token, headers }),
        );
      assert.deepEqual((await me()).permissions, []);
      assert.deepEqual((await me(inOrg(a.id))).permissions, ['task:list', 'task:view']);
      assert.deepEqual((await me(inOrg(a.id))).roles, [], 'roles stay the global ones');
      assert.deepEqual((await me(inOrg(b.id))).permissions, []);
      assert.deepEqual((await me()).permissions, [], 'the view kept without the header is unchanged');
      // /trpc answers the same.
      const trpc = await t.request('GET', '/trpc/auth.me', { token: user.token, headers: inOrg(a.id) });
      assert.deepEqual(trpc.body.result.data.permissions, ['task:list', 'task:view']);
    });

    test('membership, role and organization changes on one node hold on another within 2 s', async () => {
      const other = await startConsole(lane, { database: t.database }, {}, { keepTables: true });
      const within2s = async (check: () => Promise<boolean>) => {
        for (const t0 = Date.now(); !(await check()); await sleep(50))
          if (Date.now() - t0 > 2000) assert.fail('not seen on the other node within 2 s');
      };
      try {
        const org = await createOrg();
        const role = await orgRole(org.id, ['task:list']);
        const user = await plainUser();
        ok(await putMember(org.id, user.id, [role.id]));
        const statusThere = async () =>
          (await other.request('GET', '/api/tasks', { token: user.token, headers: inOrg(org.id) })).status;
        assert.equal(await statusThere(), 200, 'the other node has the standing cached');
        ok(await t.request('PUT', `/api/roles/${role.id}`, { token: admin, body: { permissions: [] } }));
        await within2s(async () => (await statusThere()) === 403);
        ok(await t.request('PUT', `/api/roles/${role.id}`, { token: admin, body: { permissions: ['task:list'] } }));
        await within2s(async () => (await statusThere()) === 200);
        ok(await t.request('DELETE', `/api/organizations/${org.id}/members/${user.id}`, { token: admin }));
        await within2s(async () => (await statusThere()) === 403);
        ok(await t.request('DELETE', `/api/organizations/${org.id}`, { token: admin }));
        await within2s(async () => (await statusThere()) === 404);
      } finally {
        await other.close();
      }
    });

    test("an organization's role named admin confers nothing; administrators act in every organization", async () => {
      const org = await createOrg();
      const fake = await orgRole(org.id, [], 'admin');
      assert.equal(fake.is_system, false);
      const user = await plainUser();
      ok(await putMember(org.id, user.id, [fake.id]));
      assertError(await t.request('GET', '/api/users', { token: user.token, headers: inOrg(org.id) }), 403, 'E4031');
      assertError(
        await t.request('GET', '/api/system/settings/smtp', { token: user.token, headers: inOrg(org.id) }),
        403,
        'E4031',
      );

      // Not a member, yet an administrator: allowed, also in a disabled organization; an unknown one is still 404.
      ok(await t.request('GET', '/api/users', { token: admin, headers: inOrg(org.id) }));
      ok(await t.request('PUT', `/api/organizations/${org.id}`, { token: admin, body: { status: 'disabled' } }));
      ok(await t.request('GET', '/api/users', { token: admin, headers: inOrg(org.id) }));
      assertError(await t.request('GET', '/api/users', { token: admin, headers: inOrg(UNKNOWN_ID) }), 404, 'E4041');
    });

    test('members may grant and revoke only what they hold; acting in one organization they manage only that one', async () => {
      const a = await createOrg();
      const b = await createOrg();
      const manage = await orgRole(a.id, ['org:member:update', 'org:view', 'task:list']);
      const strong = await orgRole(a.id, ['task:delete']);
      const small = await orgRole(a.id, ['task:list']);
      const manager = await plainUser();
      const target = await createUser(t, admin);
      ok(await putMember(a.id, manager.id, [manage.id]));
      const asManager = (orgId: string, roleIds: string[]) =>
        t.request('PUT', `/api/organizations/${orgId}/members`, {
          token: manager.token,
          headers: inOrg(a.id),
          body: { user_id: target.id, role_ids: roleIds },
        });

      assertError(await putMember(a.id, target.id, [small.id], manager.token), 403, 'E4031');
      ok(await asManager(a.id, [small.id]));
      assertError(await asManager(a.id, [strong.id]), 403, 'E4031', /task:delete/);
      ok(await putMember(a.id, target.id, [strong.id]));
      assertError(await asManager(a.id, []), 403, 'E4031');
      assertError(
        await t.request('DELETE', `/api/organizations/${a.id}/members/${target.id}`, {
          token: manager.token,
          headers: inOrg(a.id),
        }),
        403,
        'E4031',
      );
      // B is out of sight while acting in A, for the manager and for an administrator alike.
      assertError(await asManager(b.id, []), 404, 'E4041');
      assertError(
        await t.request('GET', `/api/organizations/${b.id}`, { token: admin, headers: inOrg(a.id) }),
        404,
        'E4041',
      );
      assert.deepEqual(
        ok<any[]>(
          await t.request('GET', '/api/organizations?page_size=100', { token: admin, headers: inOrg(a.id) }),
        ).map((o) => o.id),
        [a.id],
      );
      assertError(
        await t.request('POST', '/api/roles', {
          token: admin,
          headers: inOrg(a.id),
          body: { name: unique(), org_id: b.id },
        }),
        400,
        'E4001',
        /^org_id: /,
      );
    });

    test('tasks and audit records made in an organization carry it; lists with the header show only its own', async () => {
      const a = await createOrg();
      const b = await createOrg();
      const exportIn = async (headers?: Record<string, string>) =>
        ok(await t.request('POST', '/api/authorization/users/export', { token: admin, headers, body: {} }));
      const inA = await exportIn(inOrg(a.id));
      const inB = await exportIn(inOrg(b.id.toUpperCase()));
      const outside = await exportIn();
      assert.equal(inA.org_id, a.id);
      assert.equal(inB.org_id, b.id);
      assert.equal(outside.org_id, null);

      const tasks = async (headers?: Record<string, string>) =>
        ok<any[]>(await t.request('GET', '/api/tasks?page_size=100', { token: admin, headers })).map((x) => x.id);
      assert.deepEqual(await tasks(inOrg(a.id)), [inA.id]);
      assert.deepEqual(await tasks(inOrg(b.id)), [inB.id]);
      const everything = await tasks();
      for (const id of [inA.id, inB.id, outside.id]) assert.ok(everything.includes(id));
      ok(await t.request('GET', `/api/tasks/${inA.id}`, { token: admin, headers: inOrg(a.id) }));
      assertError(await t.request('GET', `/api/tasks/${inA.id}`, { token: admin, headers: inOrg(b.id) }), 404, 'E4041');
      assertError(
        await t.request('GET', `/api/tasks/${inA.id}/logs`, { token: admin, headers: inOrg(b.id) }),
        404,
        'E4041',
      );
      assertError(
        await t.request('DELETE', `/api/tasks/${inA.id}`, { token: admin, headers: inOrg(b.id) }),
        404,
        'E4041',
      );

      const exports = async (headers?: Record<string, string>) =>
        ok<any[]>(await t.request('GET', '/api/audit-logs?action=export&page_size=100', { token: admin, headers }));
      const auditA = await exports(inOrg(a.id));
      assert.deepEqual(
        auditA.map((r) => r.resource_id),
        [inA.id],
      );
      assert.equal(auditA[0].org_id, a.id);
      assert.deepEqual(
        (await exports(inOrg(b.id))).map((r) => r.resource_id),
        [inB.id],
      );
      const all = await exports();
      assert.deepEqual(
        new Set(all.filter((r) => [inA.id, inB.id, outside.id].includes(r.resource_id)).map((r) => r.org_id)),
        new Set([a.id, b.id, null]),
      );
      // Every record listed with the header is the organization's.
      const listedInA = ok<any[]>(
        await t.request('GET', '/api/audit-logs?page_size=100', { token: admin, headers: inOrg(a.id) }),
      );
      assert.ok(listedInA.length >= 1 && listedInA.every((r) => r.org_id === a.id));
    });

    test('an organization role holds only codes that act within the organization: never a way to global rights', async () => {
      const org = await createOrg();
      for (const code of [
        'user:update',
        'role:create',
        'role:update',
        'system:settings:update',
        'user:export',
        'task:schedule:update',
      ]) {
        assertError(
          await t.request('POST', '/api/roles', {
            token: admin,
            body: { name: unique('orgrole'), org_id: org.id, permissions: ['task:list', code] },
          }),
          400,
          'E4001',
          new RegExp(`^permissions: ${code} `),
        );
      }
      const role = await orgRole(org.id, ['task:list', 'role:list']);
      assertError(
        await t.request('PUT', `/api/roles/${role.id}`, {
          token: admin,
          body: { permissions: ['task:list', 'user:update'] },
        }),
        400,
        'E4001',
        /^permissions: user:update /,
      );
      // A global role may hold any code, as before.
      ok(
        await t.request('POST', '/api/roles', {
          token: admin,
          body: { name: unique('role'), permissions: ['user:update', 'task:list'] },
        }),
        201,
      );
    });

    test('a global code an organization role holds anyway (saved before the rule) grants nothing through the header', async () => {
      const org = await createOrg();
      const role = await orgRole(org.id, ['task:list']);
      const { db } = t.c;
      const { orgScopes } = t.c.services;
      await db.knex(db.t.rolePermissions).insert({ role_id: role.id, permission: 'user:list' });
      await orgScopes.changed();
      const user = await plainUser();
      ok(await putMember(org.id, user.id, [role.id]));
      ok(await t.request('GET', '/api/tasks', { token: user.token, headers: inOrg(org.id) }));
      assertError(await t.request('GET', '/api/users', { token: user.token, headers: inOrg(org.id) }), 403, 'E4031');
    });

    test("a member sees the tasks they made in the organization with its header, not another's", async () => {
      const a = await createOrg();
      const b = await createOrg();
      // Exporting users is a global right (it reads every user); seeing the tasks is the organization's.
      const exporting = await createRole(t, admin, ['user:export']);
      const viewerA = await orgRole(a.id, ['task:list', 'task:view']);
      const viewerB = await orgRole(b.id, ['task:list']);
      const user = await plainUser();
      ok(await t.request('PUT', `/api/users/${user.id}`, { token: admin, body: { role_ids: [exporting.id] } }));
      ok(await putMember(a.id, user.id, [viewerA.id]));
      ok(await putMember(b.id, user.id, [viewerB.id]));
      const task = ok(
        await t.request('POST', '/api/authorization/users/export', {
          token: user.token,
          headers: inOrg(a.id),
          body: {},
        }),
      );
      assert.equal(task.org_id, a.id);
      assert.equal(task.creator_id, user.id);
      assert.deepEqual(
        ok<any[]>(await t.request('GET', '/api/tasks', { token: user.token, headers: inOrg(a.id) })).map((x) => x.id),
        [task.id],
      );
      assert.deepEqual(
        ok<any[]>(await t.request('GET', '/api/tasks', { token: user.token, headers: inOrg(b.id) })),
        [],
      );
      assert.deepEqual(
        ok<any[]>(await t.request('GET', '/api/user-tasks', { token: user.token, headers: inOrg(b.id) })),
        [],
      );
      assert.deepEqual(
        ok<any[]>(await t.request('GET', '/api/user-tasks', { token: user.token, headers: inOrg(a.id) })).map(
          (x) => x.id,
        ),
        [task.id],
      );
    });

    test('GET /auth/me/organizations lists the organizations the caller may act in, whatever the header says', async () => {
      const [a, b, disabled] = [await createOrg(), await createOrg(), await createOrg({ status: 'disabled' })];
      const user = await plainUser();
      const mine = async (query = '', headers = {}) =>
        t.request('GET', `/api/auth/me/organizations?page_size=100${query}`, { token: user.token, headers });
      const none = await mine();
      assert.equal(none.status, 200);
      assert.deepEqual([none.body.data, none.body.total], [[], 0]);

      assert.equal((await putMember(a.id, user.id, [])).status, 200);
      assert.equal((await putMember(disabled.id, user.id, [])).status, 200);
      const listed = await mine('', inOrg(a.id));
      assert.deepEqual(
        listed.body.data.map((o: { id: string }) => o.id),
        [disabled.id, a.id],
      );
      assert.deepEqual(
        Object.keys(listed.body.data[0]).sort(),
        ORG_KEYS.filter((k) => k !== 'members'),
      );
      assert.equal(listed.body.data[0].status, 'disabled');
      assert.deepEqual(
        (await mine(`&search=${encodeURIComponent(a.name)}`)).body.data.map((o: { id: string }) => o.id),
        [a.id],
      );
      // Administrators may act in every organization, so every one is theirs.
      const all = ok<{ id: string }[]>(
        await t.request('GET', '/api/auth/me/organizations?page_size=100', { token: admin }),
      ).map((o) => o.id);
      for (const org of [a, b, disabled]) assert.ok(all.includes(org.id), org.name);

      assert.equal(
        (await t.request('DELETE', `/api/organizations/${a.id}/members/${user.id}`, { token: admin })).status,
        200,
      );
      assert.deepEqual(
        (await mine()).body.data.map((o: { id: string }) => o.id),
        [disabled.id],
      );
      assertError(await mine('&page_size=0'), 400, 'E4001', /page_size/);
      assertError(await t.request('GET', '/api/auth/me/organizations'), 401, 'E4011');
    });
  });
}

for (const lane of lanes()) {
  describe(`organizations migration [${lane.name}]`, () => {
    test('an existing installation upgrades: its roles become global roles whose names stay unique', async () => {
      const config = testConfig(lane);
      // The schema as it was before organizations, and roles made then.
      const adminRoleId = randomUUID();
      await installBefore(config, '004_organizations', async (db) => {
        const now = db.dialect.toDbTime(new Date());
        await db.knex(db.t.roles).insert([
          {
            id: adminRoleId,
            name: 'admin',
            description: 'seeded before',
            is_system: true,
            created_at: now,
            updated_at: now,
          },
          { id: randomUUID(), name: 'Auditors', description: '', is_system: false, created_at: now, updated_at: now },
        ]);
      });

      const t = await startConsole(lane, { database: config.database });
      try {
        const admin = await t.login();
        const [old] = ok<any[]>(await t.request('GET', '/api/roles?search=auditors', { token: admin }));
        assert.equal(old.name, 'Auditors');
        assert.equal(old.org_id, null);
        assertError(
          await t.request('POST', '/api/roles', { token: admin, body: { name: 'AUDITORS' } }),
          400,
          'E4001',
          /already exists/,
        );
        const org = ok(
          await t.request('POST', '/api/organizations', { token: admin, body: { name: 'Upgraded' } }),
          201,
        );
        ok(await t.request('POST', '/api/roles', { token: admin, body: { name: 'auditors', org_id: org.id } }), 201);
        // The admin role seeded before the upgrade is still found by name: no second one was made, and the
        // bootstrap administrator holds it.
        const adminRoles = ok<any[]>(await t.request('GET', '/api/roles?search=admin', { token: admin })).filter(
          (r) => r.name === 'admin',
        );
        assert.deepEqual(
          adminRoles.map((r) => r.id),
          [adminRoleId],
        );
        assert.deepEqual(
          ok(await t.request('GET', '/api/auth/me', { token: admin })).roles.map((r: { id: string }) => r.id),
          [adminRoleId],
        );
      } finally {
        await t.close();
      }
    });
  });
}
