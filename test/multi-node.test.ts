import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { captureLogs, lanes, startConsole, type TestConsole } from './support/harness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it holds; fails when that takes longer than `limitMs`. Answers the time it took. */
async function within(limitMs: number, what: string, check: () => Promise<boolean>): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if (await check()) return performance.now() - t0;
    if (performance.now() - t0 > limitMs) assert.fail(`${what}: not seen within ${limitMs} ms`);
    await sleep(50);
  }
}

for (const lane of lanes()) {
  describe(`change feed across nodes [${lane.name}]`, () => {
    let a: TestConsole;
    let b: TestConsole;
    let adminA: string;
    let adminB: string;
    const logsB = captureLogs('error');

    before(async () => {
      a = await startConsole(lane);
      b = await startConsole(lane, { database: a.database }, { logger: logsB.logger }, { keepTables: true });
      adminA = await a.login();
      adminB = await b.login();
    });
    after(async () => {
      await b?.close();
      await a?.close();
    });

    test('both nodes share users and the signing secret', async () => {
      const u = await a.userWith(['user:list']);
      const me = await b.request('GET', '/api/auth/me', { token: u.token });
      assert.equal(me.status, 200, me.text);
      assert.equal(me.body.data.id, u.id);
    });

    test('a settings change on A holds on B within 2 s', async () => {
      const read = async () =>
        (await b.request('GET', '/api/system/settings', { token: adminB })).body.data.password_min_length;
      assert.equal(await read(), '8');
      assert.equal(
        (await a.request('PUT', '/api/system/settings', { token: adminA, body: { password_min_length: '20' } })).status,
        200,
      );
      await within(2000, 'setting on B', async () => (await read()) === '20');
      // The typed value B's rules use has changed too, not only the map it serves.
      const short = await b.request('POST', '/api/users', {
        token: adminB,
        body: { username: 'feedshort', email: 'feedshort@example.test', password: 'only-15-chars!!' },
      });
      assert.equal(short.status, 400);
      assert.equal(short.body.code, 'E4001');
      assert.equal(
        (await a.request('PUT', '/api/system/settings', { token: adminA, body: { password_min_length: '8' } })).status,
        200,
      );
      await within(2000, 'setting back on B', async () => (await read()) === '8');
    });

    test('a user disabled on A answers E4012 on B within 2 s (and on A at once)', async () => {
      const u = await a.userWith(['user:list']);
      assert.equal((await b.request('GET', '/api/users', { token: u.token })).status, 200, 'B has the user cached');
      const off = await a.request('PUT', `/api/users/${u.id}`, { token: adminA, body: { status: 'disabled' } });
      assert.equal(off.status, 200, off.text);
      const onA = await a.request('GET', '/api/users', { token: u.token });
      assert.equal(onA.status, 401);
      assert.equal(onA.body.code, 'E4012');
      await within(
        2000,
        'disabled user on B',
        async () => (await b.request('GET', '/api/users', { token: u.token })).body.code === 'E4012',
      );
    });

    test('a permission removed on A is refused on B within 2 s', async () => {
      const u = await a.userWith(['user:list']);
      assert.equal((await b.request('GET', '/api/users', { token: u.token })).status, 200);
      const role = (await a.request('GET', '/api/auth/me', { token: u.token })).body.data.roles[0].id as string;
      assert.equal(
        (await a.request('PUT', `/api/roles/${role}`, { token: adminA, body: { permissions: [] } })).status,
        200,
      );
      await within(
        2000,
        'permission change on B',
        async () => (await b.request('GET', '/api/users', { token: u.token })).body.code === 'E4031',
      );
    });

    test('GET /auth/me on B shows a role and profile change made on A within 2 s (it is answered from the identity cache)', async () => {
      const u = await a.userWith(['user:list']);
      const before = (await b.request('GET', '/api/auth/me', { token: u.token })).body.data;
      assert.deepEqual(before.permissions, ['user:list']);
      const role = before.roles[0].id as string;
      assert.equal(
        (
          await a.request('PUT', `/api/roles/${role}`, {
            token: adminA,
            body: { permissions: ['user:list', 'user:view'] },
          })
        ).status,
        200,
      );
      assert.equal(
        (await a.request('PUT', `/api/users/${u.id}`, { token: adminA, body: { full_name: 'Renamed On A' } })).status,
        200,
      );
      await within(2000, 'me on B', async () => {
        const me = (await b.request('GET', '/api/auth/me', { token: u.token })).body.data;
        return (
          me.full_name === 'Renamed On A' &&
          me.permissions.join() === 'user:list,user:view' &&
          me.roles[0].permissions.join() === 'user:list,user:view'
        );
      });
    });

    test('a user search on B finds a user created on A and loses one deleted on A within 2 s (B searches kept keys)', async () => {
      const search = async (term: string) =>
        (await b.request('GET', `/api/users?search=${term}`, { token: adminB })).body as {
          total: number;
          data: { id: string }[];
        };
      const marker = `kx${Date.now().toString(36)}`;
      assert.equal((await search(marker)).total, 0, 'B has loaded the keys of the live users');
      const created = await a.request('POST', '/api/users', {
        token: adminA,
        body: { username: `${marker}one`, email: `${marker}@example.test`, password: 'a-long-password-1' },
      });
      assert.equal(created.status, 201, created.text);
      // A term B has not been asked for: no cached page stands between it and the keys.
      await within(
        2000,
        'new user in a search on B',
        async () => (await search(`${marker}on`)).data[0]?.id === created.body.data.id,
      );
      assert.equal((await a.request('DELETE', `/api/users/${created.body.data.id}`, { token: adminA })).status, 200);
      await within(
        2000,
        'deleted user gone from a search on B',
        async () => (await search(`${marker.toUpperCase()}O`)).total === 0,
      );
    });

    test('a user search on B shows a user and a role changed on A within 2 s (B searches kept users)', async () => {
      const marker = `kr${Date.now().toString(36)}`;
      const role = await a.request('POST', '/api/roles', { token: adminA, body: { name: `${marker}-role` } });
      assert.equal(role.status, 201, role.text);
      const created = await a.request('POST', '/api/users', {
        token: adminA,
        body: {
          username: `${marker}one`,
          email: `${marker}@example.test`,
          password: 'a-long-password-1',
          role_ids: [role.body.data.id],
        },
      });
      assert.equal(created.status, 201, created.text);
      const found = async () =>
        (await b.request('GET', `/api/users?search=${marker}`, { token: adminB })).body.data[0] as
          { full_name: string; roles: { name: string }[] } | undefined;
      await within(2000, 'new user in a search on B', async () => (await found())?.roles[0]?.name === `${marker}-role`);
      const renamed = await a.request('PUT', `/api/users/${created.body.data.id}`, {
        token: adminA,
        body: { full_name: 'Renamed On A' },
      });
      assert.equal(renamed.status, 200, renamed.text);
      await within(2000, 'renamed user in a search on B', async () => (await found())?.full_name === 'Renamed On A');
      const roleRenamed = await a.request('PUT', `/api/roles/${role.body.data.id}`, {
        token: adminA,
        body: { name: `${marker}-renamed` },
      });
      assert.equal(roleRenamed.status, 200, roleRenamed.text);
      await within(
        2000,
        'renamed role in a search on B',
        async () => (await found())?.roles[0]?.name === `${marker}-renamed`,
      );
    });

    test('logout on A rejects the token on B within 2 s', async () => {
      const token = await a.login();
      assert.equal((await b.request('GET', '/api/auth/me', { token })).status, 200, 'B has the session cached');
      assert.equal((await a.request('POST', '/api/auth/logout', { token })).status, 200);
      await within(2000, 'logout on B', async () => {
        const res = await b.request('GET', '/api/auth/me', { token });
        return res.status === 401 && res.body.code === 'E4011';
      });
    });

    test('a cache that fails to reload on a change is logged and keeps serving', async () => {
      const { knex, t } = a.c.db;
      await knex.schema.renameTable(t.settings, `${t.settings}_away`);
      try {
        await a.c.services.feed.publish('settings');
        await within(2000, 'reload failure logged on B', async () =>
          logsB.lines.some((l) => l.msg === 'change listener failed' && l.channel === 'settings'),
        );
      } finally {
        await knex.schema.renameTable(`${t.settings}_away`, t.settings);
      }
      const res = await b.request('GET', '/api/system/settings', { token: adminB });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.password_min_length, '8');
    });
  });
}
