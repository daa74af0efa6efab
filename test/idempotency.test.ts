import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  claimIdempotencyKey,
  deleteExpiredIdempotencyKeys,
  readIdempotencyKey,
} from '../db/repositories/idempotency-keys.ts';
import { requestHashOf, sha256 } from '../routers/common/idempotency.ts';
import { assertError, ok, PASSWORD, unique } from './support/identity.ts';
import { lanes, startConsole, type Reply, type TestConsole } from './support/harness.ts';
import { resolveRef } from './support/openapi-doc.ts';

const KEY = 'Idempotency-Key';
const replayed = (res: Reply) => res.headers['idempotent-replayed'];
const userBody = (name: string) => ({ username: name, email: `${name}@example.test`, password: PASSWORD });

for (const lane of lanes()) {
  describe(`Idempotency-Key [${lane.name}]`, () => {
    let t: TestConsole;
    let admin: string;
    const usersNamed = async (name: string) =>
      ok<unknown[]>(await t.request('GET', `/api/users?search=${name}`, { token: admin })).length;

    before(async () => {
      t = await startConsole(lane);
      admin = await t.login();
    });
    after(async () => t?.close());

    test('a repeated user create answers the first answer and creates one user', async () => {
      const name = unique();
      const key = randomUUID();
      const first = await t.request('POST', '/api/users', {
        token: admin,
        body: userBody(name),
        headers: { [KEY]: key },
      });
      const user = ok(first, 201);
      assert.equal(replayed(first), undefined);
      // The same input with its keys in another order and other spacing is the same request.
      const raw = `{ "password": "${PASSWORD}",  "email": "${name}@example.test", "username": "${name}" }`;
      const again = await t.request('POST', '/api/users', { token: admin, raw, headers: { [KEY]: key } });
      assert.equal(again.status, 201, again.text);
      assert.equal(again.text, first.text);
      assert.equal(replayed(again), 'true');
      assert.equal(await usersNamed(name), 1);
      // Without the key the request runs: the username is taken.
      assertError(await t.request('POST', '/api/users', { token: admin, body: userBody(name) }), 400, 'E4001');
      assert.equal(user.username, name);
    });

    test('the key with another body is 400 E4001 naming the header, and nothing runs', async () => {
      const key = randomUUID();
      const name = unique();
      ok(await t.request('POST', '/api/users', { token: admin, body: userBody(name), headers: { [KEY]: key } }), 201);
      const other = unique();
      assertError(
        await t.request('POST', '/api/users', { token: admin, body: userBody(other), headers: { [KEY]: key } }),
        400,
        'E4001',
        /^Idempotency-Key: /,
      );
      assert.equal(await usersNamed(other), 0);
      // The same body on another route is another request too.
      assertError(
        await t.request('POST', '/api/roles', {
          token: admin,
          body: { name: other, permissions: [] },
          headers: { [KEY]: key },
        }),
        400,
        'E4001',
        /^Idempotency-Key: /,
      );
    });

    test('a malformed key is 400 E4001 naming the header', async () => {
      for (const key of ['', 'has space', 'x'.repeat(256), 'naïve']) {
        const name = unique();
        const res = await t.request('POST', '/api/users', {
          token: admin,
          body: userBody(name),
          headers: { [KEY]: key },
        });
        assertError(res, 400, 'E4001', /^Idempotency-Key: must be 1 to 255/);
        assert.equal(await usersNamed(name), 0);
      }
      ok(
        await t.request('POST', '/api/users', {
          token: admin,
          body: userBody(unique()),
          headers: { [KEY]: 'A-z_0.9:~+/='.padEnd(255, 'k') },
        }),
        201,
      );
    });

    test('a deterministic 4xx is kept and replayed; the key is per user', async () => {
      const key = randomUUID();
      const bad = { username: unique(), email: 'not-an-email', password: PASSWORD };
      const first = await t.request('POST', '/api/users', { token: admin, body: bad, headers: { [KEY]: key } });
      assertError(first, 400, 'E4001', /email/);
      const again = await t.request('POST', '/api/users', { token: admin, body: bad, headers: { [KEY]: key } });
      assertError(again, 400, 'E4001', first.body.err);
      assert.equal(replayed(again), 'true');
    });

    test('an export task is not created twice; the same key of another user runs for them', async () => {
      const a = await t.userWith(['user:export', 'task:list']);
      const b = await t.userWith(['user:export', 'task:list']);
      const key = randomUUID();
      const first = ok(
        await t.request('POST', '/api/authorization/users/export', {
          token: a.token,
          body: {},
          headers: { [KEY]: key },
        }),
      );
      const again = await t.request('POST', '/api/authorization/users/export', {
        token: a.token,
        body: {},
        headers: { [KEY]: key },
      });
      assert.equal(ok(again).id, first.id);
      assert.equal(replayed(again), 'true');
      assert.equal(ok<unknown[]>(await t.request('GET', '/api/tasks', { token: a.token })).length, 1);

      const theirs = await t.request('POST', '/api/authorization/users/export', {
        token: b.token,
        body: {},
        headers: { [KEY]: key },
      });
      assert.notEqual(ok(theirs).id, first.id);
      assert.equal(replayed(theirs), undefined);
      assert.equal(ok<unknown[]>(await t.request('GET', '/api/tasks', { token: b.token })).length, 1);
    });

    test('a schedule trigger with a key runs once', async () => {
      const key = randomUUID();
      const first = ok(
        await t.request('POST', '/api/task-schedules/session-cleanup/trigger', {
          token: admin,
          headers: { [KEY]: key },
        }),
      );
      const again = await t.request('POST', '/api/task-schedules/session-cleanup/trigger', {
        token: admin,
        headers: { [KEY]: key },
      });
      assert.equal(ok(again).id, first.id);
      assert.equal(replayed(again), 'true');
    });

    test('/trpc mutations honour the key; a batch of several calls with one is refused whole', async () => {
      const key = randomUUID();
      const name = unique('role');
      const body = { name, permissions: [] };
      const first = await t.request('POST', '/trpc/roles.create', { token: admin, body, headers: { [KEY]: key } });
      assert.equal(first.status, 200, first.text);
      const again = await t.request('POST', '/trpc/roles.create', { token: admin, body, headers: { [KEY]: key } });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.result.data.id, first.body.result.data.id);
      assert.equal(replayed(again), 'true');
      // REST and /trpc name the same procedure: the key's answer is the same on either.
      const rest = await t.request('POST', '/api/roles', { token: admin, body, headers: { [KEY]: key } });
      assert.equal(ok(rest, 201).id, first.body.result.data.id);
      const roles = ok<{ name: string }[]>(await t.request('GET', '/api/roles?page_size=100', { token: admin }));
      assert.equal(roles.filter((r) => r.name === name).length, 1);

      const [x, y] = [unique('role'), unique('role')];
      const batch = await t.request('POST', '/trpc/roles.create,roles.create?batch=1', {
        token: admin,
        body: { 0: { name: x, permissions: [] }, 1: { name: y, permissions: [] } },
        headers: { [KEY]: randomUUID() },
      });
      assert.ok(Array.isArray(batch.body), batch.text);
      for (const call of batch.body) {
        assert.equal(call.error.appCode, 'E4001', batch.text);
        assert.match(call.error.err, /^Idempotency-Key: /);
      }
      const after = ok<{ name: string }[]>(await t.request('GET', '/api/roles?page_size=100', { token: admin }));
      assert.equal(after.filter((r) => r.name === x || r.name === y).length, 0);
    });

    test('/auth/* ignores the header: logins with one key each log in', async () => {
      const key = randomUUID();
      const body = { username: 'admin', password: 'admin-password-1' };
      const one = await t.request('POST', '/api/auth/login', { body, headers: { [KEY]: key } });
      const two = await t.request('POST', '/api/auth/login', { body, headers: { [KEY]: key } });
      assert.equal(one.status, 200, one.text);
      assert.equal(two.status, 200, two.text);
      assert.notEqual(one.body.data.token, two.body.data.token);
      assert.equal(replayed(two), undefined);
      // Not even checked there.
      assert.equal((await t.request('POST', '/api/auth/login', { body, headers: { [KEY]: 'not a key' } })).status, 200);
      const trpc = await t.request('POST', '/trpc/auth.login', { body, headers: { [KEY]: key } });
      assert.equal(trpc.status, 200, trpc.text);
      assert.notEqual(trpc.body.result.data.token, one.body.data.token);
      // Other methods than POST ignore it as well.
      assert.equal(
        (await t.request('PUT', '/api/system/settings', { token: admin, body: {}, headers: { [KEY]: 'not a key' } }))
          .status,
        200,
      );
    });

    test('a claim still running makes a repeat wait, then 400; a lapsed one (its node died) is taken over', async () => {
      const userId = ok(await t.request('GET', '/api/auth/me', { token: admin })).id as string;
      const name = unique();
      const body = userBody(name);
      const key = randomUUID();
      const claim = {
        userId,
        keyHash: sha256(key),
        requestHash: requestHashOf('users.create', undefined, body),
        claimId: randomUUID(),
      };
      assert.deepEqual(await claimIdempotencyKey(t.c.db, { ...claim, leaseMs: 60_000 }), { claimed: true });
      const t0 = Date.now();
      assertError(
        await t.request('POST', '/api/users', { token: admin, body, headers: { [KEY]: key } }),
        400,
        'E4001',
        /still running/,
      );
      assert.ok(Date.now() - t0 >= 1000, 'waited for the first request (half of the 10 s write timeout is 5 s)');
      assert.equal(await usersNamed(name), 0);

      const lapsedKey = randomUUID();
      await claimIdempotencyKey(t.c.db, {
        ...claim,
        keyHash: sha256(lapsedKey),
        claimId: randomUUID(),
        leaseMs: -1000,
      });
      const res = await t.request('POST', '/api/users', { token: admin, body, headers: { [KEY]: lapsedKey } });
      ok(res, 201);
      assert.equal(replayed(res), undefined);
      assert.equal((await readIdempotencyKey(t.c.db, userId, sha256(lapsedKey)))?.state, 'done');
    });

    test('the clean-up deletes answers and claims past their time', async () => {
      const userId = randomUUID();
      await claimIdempotencyKey(t.c.db, {
        userId,
        keyHash: sha256('old'),
        requestHash: 'x',
        claimId: randomUUID(),
        leaseMs: -1000,
      });
      await claimIdempotencyKey(t.c.db, {
        userId,
        keyHash: sha256('live'),
        requestHash: 'x',
        claimId: randomUUID(),
        leaseMs: 60_000,
      });
      assert.equal(await deleteExpiredIdempotencyKeys(t.c.db, new Date()), 1);
      assert.equal(await readIdempotencyKey(t.c.db, userId, sha256('old')), undefined);
      assert.ok(await readIdempotencyKey(t.c.db, userId, sha256('live')));
    });

    test('the OpenAPI document lists the header on authenticated POSTs outside /auth', async () => {
      const doc = (await t.request('GET', '/api/openapi.json')).body;
      const names = (method: string, path: string) =>
        (doc.paths[path][method].parameters ?? []).map((p: object) => resolveRef(doc, p).name);
      assert.ok(names('post', '/users').includes(KEY));
      assert.ok(names('post', '/authorization/users/export').includes(KEY));
      assert.ok(doc.paths['/users'].post.responses['201'].headers['Idempotent-Replayed']);
      assert.ok(!names('post', '/auth/login').includes(KEY));
      assert.ok(!names('post', '/auth/logout').includes(KEY));
      assert.ok(!names('put', '/users/{id}').includes(KEY));
    });

    test('browsers may send the header and read the replay mark (CORS)', async () => {
      const preflight = await t.request('OPTIONS', '/api/users', {
        headers: {
          origin: 'https://admin.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type,idempotency-key',
        },
      });
      assert.match(String(preflight.headers['access-control-allow-headers']), /Idempotency-Key/i);
      const key = randomUUID();
      const body = userBody(unique());
      const headers = { origin: 'https://admin.example', [KEY]: key };
      ok(await t.request('POST', '/api/users', { token: admin, body, headers }), 201);
      const again = await t.request('POST', '/api/users', { token: admin, body, headers });
      assert.equal(replayed(again), 'true');
      assert.match(String(again.headers['access-control-expose-headers']), /Idempotent-Replayed/i);
    });

    test('two nodes sending one key at once create one user, and both answer it', async () => {
      const b = await startConsole(lane, { database: t.database }, {}, { keepTables: true });
      try {
        const adminB = await b.login();
        const name = unique();
        const key = randomUUID();
        const [onA, onB] = await Promise.all([
          t.request('POST', '/api/users', { token: admin, body: userBody(name), headers: { [KEY]: key } }),
          b.request('POST', '/api/users', { token: adminB, body: userBody(name), headers: { [KEY]: key } }),
        ]);
        assert.equal(ok(onA, 201).id, ok(onB, 201).id);
        assert.deepEqual([replayed(onA), replayed(onB)].sort(), ['true', undefined].sort());
        assert.equal(await usersNamed(name), 1);
      } finally {
        await b.close();
      }
    });
  });
}

for (const lane of lanes()) {
  describe(`Idempotency-Key rows per user and day [${lane.name}]`, () => {
    let t: TestConsole;
    before(async () => {
      t = await startConsole(lane, { quota: { idempotency_keys_per_day: 3 } });
    });
    after(async () => t?.close());

    // A cheap mutation any user with task:list may call.
    const ticket = (token: string, key?: string) =>
      t.request('POST', '/api/tasks/events/ticket', { token, headers: key ? { [KEY]: key } : {} });
    const rowsOf = async (userId: string) =>
      Number((await t.c.db.knex(t.c.db.t.idempotencyKeys).where({ user_id: userId }).count({ n: '*' }))[0]!.n);

    test('beyond quota.idempotency_keys_per_day new keys a user gets 429 E4291 naming the header; repeats still replay', async () => {
      const u = await t.userWith(['task:list']);
      const keys = [randomUUID(), randomUUID(), randomUUID()];
      for (const key of keys) ok(await ticket(u.token, key));
      assertError(await ticket(u.token, randomUUID()), 429, 'E4291', /^Idempotency-Key: at most 3 new keys/);
      assert.equal(await rowsOf(u.id), 3);
      const again = await ticket(u.token, keys[0]);
      ok(again);
      assert.equal(replayed(again), 'true');
      // Without a key nothing is stored, and nothing is limited.
      ok(await ticket(u.token));
      // Per user.
      const other = await t.userWith(['task:list']);
      ok(await ticket(other.token, randomUUID()));
      // A day later the rows no longer count, though the clean-up has not deleted them yet.
      await t.c.db
        .knex(t.c.db.t.idempotencyKeys)
        .where({ user_id: u.id })
        .update({ created_at: t.c.db.dialect.toDbTime(new Date(Date.now() - 86_400_000 - 60_000)) });
      ok(await ticket(u.token, randomUUID()));
    });

    test('concurrent new keys of one user store at most the quota', async () => {
      const u = await t.userWith(['task:list']);
      const answers = await Promise.all(Array.from({ length: 12 }, () => ticket(u.token, randomUUID())));
      const statuses = answers.map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, 200, 200, ...Array(9).fill(429)], JSON.stringify(statuses));
      assert.equal(await rowsOf(u.id), 3);
    });

    test('two nodes store at most the quota + 1 of one user’s concurrent new keys (each counts under its own lock)', async () => {
      const b = await startConsole(
        lane,
        { database: t.database, quota: { idempotency_keys_per_day: 3 } },
        {},
        {
          keepTables: true,
        },
      );
      try {
        const u = await t.userWith(['task:list']);
        const answers = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            (i % 2 ? b : t).request('POST', '/api/tasks/events/ticket', {
              token: u.token,
              headers: { [KEY]: randomUUID() },
            }),
          ),
        );
        assert.ok(answers.every((r) => r.status === 200 || r.body.code === 'E4291'));
        const rows = await rowsOf(u.id);
        assert.ok(rows >= 3 && rows <= 4, `${rows} rows`);
        assert.equal(answers.filter((r) => r.status === 200).length, rows);
      } finally {
        await b.close();
      }
    });
  });
}
