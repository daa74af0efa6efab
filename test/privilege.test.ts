import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { lanes, type Reply, type TestConsole } from './support/harness.ts';
import { assertError, createRole, createUser, ok, PASSWORD, startWithAdmin, unique } from './support/identity.ts';

/**
 * The privilege rule (README "Identity rules in short"): any change to a user or a role needs every permission the
 * target holds, where it holds it. A table of actor × target × operation, globally and through organizations.
 */

type Op = 'password' | 'email' | 'full_name' | 'mfa' | 'status' | 'roles' | 'unlock' | 'delete' | 'member';
type Actor = 'operator' | 'manager' | 'admin';
type Target = 'plain' | 'inA' | 'inB' | 'admin2' | 'operatorPeer' | 'self';

interface Row {
  actor: Actor;
  target: Target;
  /** The organization the request names in X-Scope-OrgID. */
  inOrg?: 'A';
  ops: Op[];
  status: 200 | 403;
}

const USER_OPS: Op[] = ['password', 'email', 'full_name', 'mfa', 'status', 'roles', 'unlock'];

const ROWS: Row[] = [
  // An operator (no org:* code) and users whose power comes from an organization's role (issue: takeover).
  { actor: 'operator', target: 'inA', ops: USER_OPS, status: 403 },
  { actor: 'operator', target: 'inB', ops: ['password', 'full_name'], status: 403 },
  // An operator and an administrator: locked, edited or taken over only by administrators.
  { actor: 'operator', target: 'admin2', ops: USER_OPS, status: 403 },
  { actor: 'operator', target: 'plain', ops: USER_OPS, status: 200 },
  { actor: 'operator', target: 'operatorPeer', ops: USER_OPS, status: 200 },
  // Oneself: user:update is enough (one's password is changed through PUT /auth/me/password, which asks the old one).
  { actor: 'operator', target: 'self', ops: ['full_name', 'mfa', 'email'], status: 200 },
  // What a manager holds in A counts for what the target holds in A, only while acting in A.
  { actor: 'manager', target: 'inA', ops: ['password', 'full_name', 'unlock', 'delete'], status: 403 },
  {
    actor: 'manager',
    target: 'inA',
    inOrg: 'A',
    ops: ['password', 'full_name', 'unlock', 'member', 'delete'],
    status: 200,
  },
  { actor: 'manager', target: 'inB', inOrg: 'A', ops: ['password', 'full_name', 'member', 'delete'], status: 403 },
  { actor: 'manager', target: 'plain', inOrg: 'A', ops: ['member', 'full_name', 'delete'], status: 200 },
  { actor: 'manager', target: 'operatorPeer', inOrg: 'A', ops: ['member', 'full_name', 'unlock'], status: 403 },
  { actor: 'manager', target: 'admin2', inOrg: 'A', ops: ['member', 'delete'], status: 403 },
  // Administrators pass.
  { actor: 'admin', target: 'inA', ops: [...USER_OPS, 'member', 'delete'], status: 200 },
  { actor: 'admin', target: 'admin2', ops: [...USER_OPS, 'delete'], status: 200 },
];

for (const lane of lanes()) {
  describe(`privilege rule [${lane.name}]`, () => {
    let t: TestConsole;
    let admin: string;
    let system: Record<string, { id: string; permissions: string[] }>;
    let orgs: Record<'A' | 'B', string>;
    let boss: Record<'A' | 'B', string>;
    const actors = {} as Record<Actor, { id: string; token: string }>;

    const putMember = (
      orgId: string,
      userId: string,
      roleIds: string[],
      token = admin,
      headers?: Record<string, string>,
    ) =>
      t.request('PUT', `/api/organizations/${orgId}/members`, {
        token,
        headers,
        body: { user_id: userId, role_ids: roleIds },
      });
    const userHolding = async (roleIds: string[]) => {
      const user = await createUser(t, admin, { role_ids: roleIds });
      return { ...user, token: await t.login(user.username, PASSWORD) };
    };

    before(async () => {
      ({ t, admin } = await startWithAdmin(lane));
      const roles = ok<any[]>(await t.request('GET', '/api/roles?page_size=100', { token: admin }));
      system = Object.fromEntries(roles.filter((r) => r.is_system).map((r) => [r.name, r]));
      const org = async () =>
        ok(await t.request('POST', '/api/organizations', { token: admin, body: { name: unique('org') } }), 201)
          .id as string;
      orgs = { A: await org(), B: await org() };
      // An organization's "admin-like" role: what the target user holds, in A or in B.
      const bossRole = async (orgId: string) =>
        ok(
          await t.request('POST', '/api/roles', {
            token: admin,
            body: {
              name: unique('boss'),
              org_id: orgId,
              permissions: ['org:update', 'org:member:update', 'org:view', 'task:delete'],
            },
          }),
          201,
        ).id as string;
      boss = { A: await bossRole(orgs.A), B: await bossRole(orgs.B) };

      const me = ok(await t.request('GET', '/api/auth/me', { token: admin }));
      actors.admin = { id: me.id, token: admin };
      actors.operator = await userHolding([system.operator!.id]);
      const managing = await createRole(t, admin, [
        'user:list',
        'user:view',
        'user:update',
        'user:delete',
        'role:create',
        'role:update',
        'role:delete',
      ]);
      actors.manager = await userHolding([managing.id]);
      ok(await putMember(orgs.A, actors.manager.id, [boss.A]));
    });
    after(async () => t.close());

    /** A fresh target of that kind (every operation changes it): its id and username. */
    const makeTarget = async (kind: Target, actor: Actor): Promise<{ id: string; username: string }> => {
      if (kind === 'self') return { id: actors[actor].id, username: '' };
      const roleIds = kind === 'admin2' ? [system.admin!.id] : kind === 'operatorPeer' ? [system.operator!.id] : [];
      const user = await createUser(t, admin, { role_ids: roleIds });
      if (kind === 'inA' || kind === 'inB')
        ok(await putMember(orgs[kind === 'inA' ? 'A' : 'B'], user.id, [boss[kind === 'inA' ? 'A' : 'B']]));
      return user;
    };

    /** Fails logins until the account locks (the default allows 5). */
    const lock = async (username: string) => {
      for (let i = 0; i < 5; i++)
        assertError(
          await t.request('POST', '/api/auth/login', { body: { username, password: 'wrong-password' } }),
          401,
          'E4011',
        );
    };
    const statusOf = async (id: string) =>
      ok(await t.request('GET', `/api/users/${id}`, { token: admin })).status as string;

    const run = (op: Op, token: string, id: string, headers?: Record<string, string>): Promise<Reply> => {
      const put = (body: unknown) => t.request('PUT', `/api/users/${id}`, { token, headers, body });
      switch (op) {
        case 'password':
          return t.request('PUT', `/api/users/${id}/password`, { token, headers, body: { password: 'taken-over-1' } });
        case 'email':
          return put({ email: `${unique()}@attacker.test` });
        case 'full_name':
          return put({ full_name: 'Renamed' });
        case 'mfa':
          return put({ mfa_enabled: true });
        case 'status':
          return put({ status: 'disabled' });
        case 'roles':
          return put({ role_ids: [] });
        case 'unlock':
          return t.request('POST', `/api/users/${id}/unlock`, { token, headers });
        case 'delete':
          return t.request('DELETE', `/api/users/${id}`, { token, headers });
        case 'member':
          return putMember(orgs.A, id, [], token, headers);
      }
    };

    for (const row of ROWS) {
      const where = row.inOrg ? ` acting in ${row.inOrg}` : '';
      for (const op of row.ops) {
        test(`${row.actor}${where} → ${op} of ${row.target}: ${row.status}`, async () => {
          const target = await makeTarget(row.target, row.actor);
          if (op === 'unlock') {
            await lock(target.username);
            assert.equal(await statusOf(target.id), 'locked');
          }
          const headers = row.inOrg ? { 'x-scope-orgid': orgs[row.inOrg] } : undefined;
          const res = await run(op, actors[row.actor].token, target.id, headers);
          if (row.status === 200) {
            assert.equal(res.status, 200, res.text);
            if (op === 'unlock') assert.equal(await statusOf(target.id), 'active');
          } else {
            assertError(res, 403, 'E4031', /holding every permission this user holds/);
            if (op === 'unlock') assert.equal(await statusOf(target.id), 'locked', 'the brute-force lock stays');
            if (op === 'password')
              assertError(
                await t.request('POST', '/api/auth/login', {
                  body: { username: target.username, password: 'taken-over-1' },
                }),
                401,
                'E4011',
              );
          }
        });
      }
    }

    test("an operator cannot take over a user whose power comes from an organization's role, nor so reach that organization", async () => {
      const u = await makeTarget('inA', 'operator');
      const operator = actors.operator.token;
      assertError(
        await t.request('PUT', `/api/users/${u.id}/password`, { token: operator, body: { password: 'taken-over-1' } }),
        403,
        'E4031',
      );
      assertError(
        await t.request('PUT', `/api/users/${u.id}`, { token: operator, body: { email: `${unique()}@attacker.test` } }),
        403,
        'E4031',
      );
      // Even holding u's token, u cannot add the (more powerful) operator to A.
      const uToken = await t.login(u.username, PASSWORD);
      assertError(
        await putMember(orgs.A, actors.operator.id, [boss.A], uToken, { 'x-scope-orgid': orgs.A }),
        403,
        'E4031',
      );
      const members = ok(await t.request('GET', `/api/organizations/${orgs.A}`, { token: admin })).members.map(
        (m: { user_id: string }) => m.user_id,
      );
      assert.ok(members.includes(u.id) && !members.includes(actors.operator.id));
    });

    test('roles: system roles only by administrators; other roles by someone holding their permissions, where they hold them', async () => {
      const operator = actors.operator.token;
      const putRole = (id: string, body: unknown, token: string, headers?: Record<string, string>) =>
        t.request('PUT', `/api/roles/${id}`, { token, headers, body });
      for (const name of ['admin', 'operator', 'viewer']) {
        assertError(
          await putRole(system[name]!.id, { description: 'edited' }, operator),
          403,
          'E4031',
          /only an administrator can change a system role/,
        );
        assertError(
          await t.request('DELETE', `/api/roles/${system[name]!.id}`, { token: actors.manager.token }),
          403,
          'E4031',
          /only an administrator/,
        );
      }
      assert.notEqual(
        ok(await t.request('GET', `/api/roles/${system.admin!.id}`, { token: admin })).description,
        'edited',
      );
      ok(await putRole(system.viewer!.id, { description: 'Read only' }, admin));
      assertError(
        await putRole(system.admin!.id, { permissions: [] }, admin),
        400,
        'E4001',
        /admin role's permissions cannot be changed/,
      );
      assertError(
        await putRole(system.admin!.id, { name: 'root' }, admin),
        400,
        'E4001',
        /cannot be deleted or renamed/,
      );

      const weak = await createRole(t, admin, ['user:list']);
      const strong = await createRole(t, admin, ['user:list', 'user:delete']);
      ok(await putRole(weak.id, { description: 'edited' }, operator));
      assertError(await putRole(strong.id, { description: 'edited' }, operator), 403, 'E4031', /user:delete/);

      // The manager holds task:delete only in A: enough for A's roles while acting in A, never for a global role.
      const manager = actors.manager.token;
      const inA = { 'x-scope-orgid': orgs.A };
      const globalDeleter = await createRole(t, admin, ['task:delete']);
      const aDeleter = ok(
        await t.request('POST', '/api/roles', {
          token: admin,
          body: { name: unique('del'), org_id: orgs.A, permissions: ['task:delete'] },
        }),
        201,
      );
      ok(await putRole(aDeleter.id, { description: 'edited' }, manager, inA));
      assertError(await putRole(aDeleter.id, { description: 'edited' }, manager), 403, 'E4031', /task:delete/);
      assertError(
        await putRole(globalDeleter.id, { description: 'edited' }, manager, inA),
        403,
        'E4031',
        /task:delete/,
      );
      assertError(
        await t.request('DELETE', `/api/roles/${globalDeleter.id}`, { token: manager, headers: inA }),
        403,
        'E4031',
        /task:delete/,
      );
      assertError(
        await t.request('POST', '/api/roles', {
          token: manager,
          headers: inA,
          body: { name: unique(), permissions: ['task:delete'] },
        }),
        403,
        'E4031',
        /task:delete/,
      );
      const made = ok(
        await t.request('POST', '/api/roles', {
          token: manager,
          headers: inA,
          body: { name: unique(), org_id: orgs.A, permissions: ['task:delete'] },
        }),
        201,
      );
      ok(await t.request('DELETE', `/api/roles/${made.id}`, { token: manager, headers: inA }));
    });
  });
}
