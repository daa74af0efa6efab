import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { lanes, type Reply, type TestConsole } from './support/harness.ts';
import { assertError, createRole, createUser, ok, PASSWORD, startWithAdmin, unique } from './support/identity.ts';

/** Answers of 50 requests sent at once: one may succeed, every other must be a clean 400 E4001. */
function exactlyOneCreated(answers: Reply[]): void {
  const created = answers.filter((r) => r.status === 201);
  assert.equal(
    created.length,
    1,
    `created: ${created.length}; statuses ${[...new Set(answers.map((r) => r.status))].join(', ')}`,
  );
  for (const r of answers.filter((a) => a.status !== 201)) assertError(r, 400, 'E4001', /already exists|taken/);
}

// Uniqueness and read-your-writes hold on every engine: through unique indexes where the engine has them,
// through the service's keyed lock where it has none (ClickHouse).
for (const lane of lanes()) {
  describe(`consistency [${lane.name}]`, () => {
    let t: TestConsole;
    let admin: string;
    before(async () => ({ t, admin } = await startWithAdmin(lane)));
    after(async () => t.close());

    const concurrently = (n: number, body: (i: number) => Record<string, unknown>, url = '/api/users') =>
      Promise.all(Array.from({ length: n }, (_, i) => t.request('POST', url, { token: admin, body: body(i) })));

    const stored = async (table: 'users' | 'roles', column: string, value: string) => {
      const { knex, t: tables } = t.c.db;
      return ((await knex(tables[table]).where(column, value).count({ n: '*' })) as { n: unknown }[])[0]!.n;
    };

    test('50 concurrent creates of one username (in any case): one user, 49 × 400 E4001', async () => {
      const name = unique('same');
      exactlyOneCreated(
        await concurrently(50, (i) => ({
          username: i % 2 ? name : name.toUpperCase(),
          email: `${name}${i}@example.test`,
          password: PASSWORD,
        })),
      );
      assert.equal(Number(await stored('users', 'username_key', name)), 1);
    });

    test('50 concurrent creates of one email: one user, 49 × 400 E4001', async () => {
      const email = `${unique('mail')}@example.test`;
      exactlyOneCreated(await concurrently(50, (i) => ({ username: unique(`m${i}x`), email, password: PASSWORD })));
      assert.equal(Number(await stored('users', 'email_key', email)), 1);
    });

    test('50 concurrent creates of one role name: one role, 49 × 400 E4001', async () => {
      const name = unique('role');
      exactlyOneCreated(
        await concurrently(50, () => ({ name, description: '', permissions: ['user:list'] }), '/api/roles'),
      );
      assert.equal(Number(await stored('roles', 'name', name)), 1);
    });

    test('an update or delete is seen by the very next request', async () => {
      for (let i = 0; i < 5; i++) {
        const user = await createUser(t, admin);
        const email = `${unique('new')}@example.test`;
        ok(await t.request('PUT', `/api/users/${user.id}`, { token: admin, body: { email, full_name: `round ${i}` } }));
        const read = ok(await t.request('GET', `/api/users/${user.id}`, { token: admin }));
        assert.deepEqual([read.email, read.full_name], [email, `round ${i}`]);
        ok(await t.request('DELETE', `/api/users/${user.id}`, { token: admin }));
        assertError(await t.request('GET', `/api/users/${user.id}`, { token: admin }), 404, 'E4041');
        const listed = ok(await t.request('GET', `/api/users?search=${user.username}`, { token: admin }));
        assert.deepEqual(listed, [], 'gone from the list');
        // A deleted user's name is free again at once.
        await createUser(t, admin, { username: user.username });

        const role = await createRole(t, admin, ['user:list']);
        ok(
          await t.request('PUT', `/api/roles/${role.id}`, {
            token: admin,
            body: { description: `round ${i}`, permissions: ['user:view'] },
          }),
        );
        const changed = ok(await t.request('GET', `/api/roles/${role.id}`, { token: admin }));
        assert.deepEqual([changed.description, changed.permissions], [`round ${i}`, ['user:view']]);
        ok(await t.request('DELETE', `/api/roles/${role.id}`, { token: admin }));
        assertError(await t.request('GET', `/api/roles/${role.id}`, { token: admin }), 404, 'E4041');

        ok(
          await t.request('PUT', '/api/system/settings', {
            token: admin,
            body: { session_idle_timeout_minutes: String(100 + i), login_failure_attempts: String(5 + i) },
          }),
        );
        const settings = ok(await t.request('GET', '/api/system/settings', { token: admin }));
        assert.deepEqual(
          [settings.session_idle_timeout_minutes, settings.login_failure_attempts],
          [String(100 + i), String(5 + i)],
        );
      }
    });
  });
}
