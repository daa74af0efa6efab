import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { appCode, createConsoleClient, loginAndListUsers } from '../examples/typed-client.ts';
import { ADMIN_PASSWORD, lanes, startConsole, type TestConsole } from './support/harness.ts';

const EXAMPLE = fileURLToPath(new URL('../examples/typed-client.ts', import.meta.url));

/** The rejection of a call, for its app code. */
async function failureOf(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
  } catch (error) {
    return error;
  }
  assert.fail('the call succeeded');
}

for (const lane of lanes()) {
  describe(`typed client [${lane.name}]`, () => {
    let t: TestConsole;
    let baseUrl: string;
    before(async () => {
      t = await startConsole(lane);
      const { port } = await t.c.listen();
      baseUrl = `http://127.0.0.1:${port}`;
    });
    after(async () => t.close());

    test('the example logs in and lists users over /trpc', async () => {
      const viewer = await t.userWith(['user:list']);
      const { me, users, total, token } = await loginAndListUsers(baseUrl, 'admin', ADMIN_PASSWORD);
      assert.equal(me.username, 'admin');
      assert.ok(me.permissions.includes('user:create'));
      assert.ok(total >= 2);
      assert.equal(users.length, total);
      assert.deepEqual(users.map((u) => u.username).sort(), ['admin', viewer.username].sort());
      assert.match(token!, /^ey/);
      // Plain procedure outputs on /trpc: no envelope around them.
      assert.equal((users[0] as Record<string, unknown>).code, undefined);
    });

    test('mutations, and the service error codes a client sees', async () => {
      let token: string | undefined;
      const api = createConsoleClient(baseUrl, () => token);
      assert.equal(appCode(await failureOf(api.users.list.query({}))), 'E4011');
      assert.equal(appCode(await failureOf(api.auth.login.mutate({ username: 'admin', password: 'wrong' }))), 'E4011');

      const session = await api.auth.login.mutate({ username: 'admin', password: ADMIN_PASSWORD });
      assert.ok('token' in session);
      token = session.token;
      const created = await api.users.create.mutate({
        username: 'typed1',
        email: 'typed1@example.test',
        password: 'password-1',
      });
      assert.equal(created.username, 'typed1');
      assert.equal((await api.users.get.query({ id: created.id })).email, 'typed1@example.test');
      assert.equal(appCode(await failureOf(api.users.get.query({ id: 'not-a-uuid' }))), 'E4001');
      // A wrong input type is refused by the compiler; forced through anyway, the server refuses it too.
      // @ts-expect-error page_size is a number
      assert.equal(appCode(await failureOf(api.users.list.query({ page_size: 'ten' }))), 'E4001');

      const nobody = await t.userWith([]);
      token = nobody.token;
      assert.equal(appCode(await failureOf(api.users.list.query({}))), 'E4031');
    });

    test('the example runs as a script', async () => {
      const run = promisify(execFile);
      const { stdout } = await run(process.execPath, ['--import', 'tsx', EXAMPLE, baseUrl, 'admin', ADMIN_PASSWORD], {
        cwd: fileURLToPath(new URL('..', import.meta.url)),
      });
      assert.match(stdout, /Logged in as admin/);
      assert.match(stdout, /admin@/);
      const failed = await run(process.execPath, ['--import', 'tsx', EXAMPLE, baseUrl, 'admin', 'wrong'], {
        cwd: fileURLToPath(new URL('..', import.meta.url)),
      }).then(
        () => undefined,
        (error: { code: number; stderr: string }) => error,
      );
      assert.equal(failed?.code, 1);
      assert.match(failed!.stderr, /E4011/);
    });
  });
}
