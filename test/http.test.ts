import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { TRPCError } from '@trpc/server';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { jsonTextExceeds, MAX_JSON_DEPTH, MAX_JSON_MEMBERS } from '../lib/json-limits.ts';
import { toErrorBody } from '../routers/common/error-body.ts';
import { guardInput } from '../routers/common/input-guard.ts';
import { captureLogs, lanes, startConsole, type Reply, type TestConsole } from './support/harness.ts';

/**
 * Test-only routes, added the way an embedding application adds its own (`c.http` before the first request;
 * fastify refuses new routes once it is ready). `GET /api/test/slow?ms=` answers after `ms` and reports
 * each arrival, so a test can act while the request is in flight.
 */
function addSlowRoute(http: FastifyInstance): { arrived: () => Promise<void> } {
  let waiting: (() => void)[] = [];
  http.get('/api/test/slow', async (request) => {
    waiting.forEach((w) => w());
    waiting = [];
    const ms = Number((request.query as { ms?: string }).ms ?? 0);
    // unref: a request cut by shutdown must not keep the test process alive until its timer ends.
    await new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
    return { code: '0', data: { slept: ms } };
  });
  return { arrived: () => new Promise<void>((resolve) => waiting.push(resolve)) };
}

/**
 * `GET /api/test/held` answers once the test calls `release()` (at once after it), reporting arrivals: a request
 * kept in flight as long as a test needs, without timing.
 */
function addHeldRoute(http: FastifyInstance): { arrived: (count: number) => Promise<void>; release: () => void } {
  let released: () => void = () => {};
  const gate = new Promise<void>((resolve) => (released = resolve));
  let arrivals = 0;
  const waiting = new Set<() => void>();
  http.get('/api/test/held', async () => {
    arrivals++;
    waiting.forEach((w) => w());
    await gate;
    return { code: '0', data: { held: true } };
  });
  const arrived = (count: number) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (arrivals < count) return;
        waiting.delete(check);
        resolve();
      };
      waiting.add(check);
      check();
    });
  return { arrived, release: () => released() };
}

/** A raw HTTP/1.1 connection: what the server sends, and when it closes the connection. */
async function rawConnection(port: number) {
  const socket = connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (d) => (text += d));
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.once('connect', () => resolve());
  });
  // A reset is seen as the missing answer.
  socket.on('error', () => {});
  return {
    socket,
    closed,
    text: () => text,
    send: (path: string) => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n`),
    /** Resolves once `count` answers have come in full (each with a Content-Length). */
    answers: async (count: number) => {
      while ((text.match(/HTTP\/1\.1 \d{3} /g) ?? []).length < count || !/\r\n\r\n[^]*[}\]]$/.test(text))
        await new Promise((r) => setTimeout(r, 5));
    },
  };
}

const LEAKS = [
  /\bat .+:\d+:\d+/,
  /node_modules/,
  /\/(work|home|tmp|srv|usr)\//,
  /\bselect\b|\binsert into\b|\bfrom\s+["`]?t/i,
  /sqlite|postgres|mysql|knex|fastify|FST_|zod/i,
  /Error:/,
];

/** An error answer: the expected envelope, and nothing internal in it. */
function assertErrorEnvelope(res: Reply, status: number, code: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body?.code, code, res.text);
  assert.equal(typeof res.body.err, 'string');
  for (const leak of LEAKS) assert.doesNotMatch(res.text, leak, `internal detail in ${res.text}`);
}

function hasKeyDeep(value: unknown, key: string): boolean {
  if (typeof value !== 'object' || value === null) return false;
  return Object.entries(value).some(([k, v]) => k === key || hasKeyDeep(v, key));
}

for (const lane of lanes()) {
  describe(`http [${lane.name}]`, () => {
    let t: TestConsole;
    let admin: string;
    before(async () => {
      t = await startConsole(lane, { server: { max_upload_size: 4096 } });
      addSlowRoute(t.c.http);
      admin = await t.login();
    });
    after(async () => t.close());

    test('security headers on /api, /healthz, /docs and on errors; a strict CSP on non-HTML answers', async () => {
      const answers = {
        api: await t.request('GET', '/api/auth/me', { token: admin }),
        apiError: await t.request('GET', '/api/users'),
        openapi: await t.request('GET', '/api/openapi.json'),
        healthz: await t.request('GET', '/healthz'),
        notFound: await t.request('GET', '/no/such/page'),
        trpc: await t.request('GET', '/trpc/auth.me'),
        docs: await t.request('GET', '/docs/'),
      };
      for (const [name, res] of Object.entries(answers)) {
        assert.equal(res.headers['x-content-type-options'], 'nosniff', name);
        assert.ok(res.headers['referrer-policy'], `${name}: Referrer-Policy`);
        assert.ok(res.headers['content-security-policy'], `${name}: CSP`);
      }
      for (const name of ['api', 'apiError', 'openapi', 'healthz', 'notFound', 'trpc'] as const) {
        assert.match(String(answers[name].headers['content-security-policy']), /default-src 'none'/, name);
      }
      assert.match(String(answers.docs.headers['content-type']), /text\/html/);
      // The docs page needs its own scripts and styles; the strict policy would blank it.
      assert.match(String(answers.docs.headers['content-security-policy']), /script-src 'self'/);
    });

    test('CORS preflight allows Authorization, Accept-Language and X-Scope-OrgID from any origin by default', async () => {
      const res = await t.request('OPTIONS', '/api/users', {
        headers: {
          origin: 'https://admin.example',
          'access-control-request-method': 'PUT',
          'access-control-request-headers': 'authorization,accept-language,x-scope-orgid,content-type',
        },
      });
      assert.ok(res.status === 204 || res.status === 200, String(res.status));
      assert.equal(res.headers['access-control-allow-origin'], '*');
      const allowed = String(res.headers['access-control-allow-headers']).toLowerCase();
      for (const h of ['authorization', 'accept-language', 'x-scope-orgid', 'content-type'])
        assert.ok(allowed.includes(h), `${h} in ${allowed}`);
      assert.match(String(res.headers['access-control-allow-methods']), /PUT/);
      assert.equal(res.headers['access-control-allow-credentials'], undefined, 'no credentials with *');
      const simple = await t.request('GET', '/api/auth/me', {
        token: admin,
        headers: { origin: 'https://admin.example' },
      });
      assert.equal(simple.headers['access-control-allow-origin'], '*');
    });

    test('/healthz and /readyz answer without a token', async () => {
      const health = await t.request('GET', '/healthz');
      assert.equal(health.status, 200);
      assert.equal(health.body.status, 'ok');
      const ready = await t.request('GET', '/readyz');
      assert.equal(ready.status, 200);
      assert.equal(ready.body.status, 'ready');
    });

    test('unknown /api routes and wrong methods are 404 E4041 envelopes', async () => {
      assertErrorEnvelope(await t.request('GET', '/api/no-such-thing', { token: admin }), 404, 'E4041');
      assertErrorEnvelope(await t.request('GET', '/api/no-such-thing'), 404, 'E4041');
      assertErrorEnvelope(await t.request('PATCH', '/api/users', { token: admin, body: {} }), 404, 'E4041');
      assertErrorEnvelope(await t.request('DELETE', '/api/permissions', { token: admin }), 404, 'E4041');
      assertErrorEnvelope(await t.request('GET', '/api'), 404, 'E4041');
    });

    test('malformed JSON, an oversized body and a non-object body are 400 E4001', async () => {
      assertErrorEnvelope(await t.request('POST', '/api/auth/login', { raw: '{"username": "admin", ' }), 400, 'E4001');
      assertErrorEnvelope(await t.request('POST', '/api/roles', { token: admin, raw: '{bad json' }), 400, 'E4001');
      const big = JSON.stringify({ username: 'admin', password: 'x'.repeat(5000) });
      assertErrorEnvelope(await t.request('POST', '/api/auth/login', { raw: big }), 400, 'E4001');
      assertErrorEnvelope(await t.request('POST', '/api/roles', { token: admin, raw: big }), 400, 'E4001');
      assertErrorEnvelope(await t.request('POST', '/api/auth/login', { body: [{ username: 'admin' }] }), 400, 'E4001');
      assertErrorEnvelope(await t.request('POST', '/api/auth/login', { body: 'admin' }), 400, 'E4001');
      assertErrorEnvelope(
        await t.request('POST', '/api/auth/login', {
          raw: 'username=admin',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
        400,
        'E4001',
      );
      // The size limit holds outside /api too, still without fastify's own error body.
      assertErrorEnvelope(await t.request('POST', '/trpc/auth.login', { raw: big }), 400, 'E4001');
    });

    test('a NUL character in any string is 400 E4001 naming the field, on every database (PostgreSQL cannot store it)', async () => {
      const res = await t.request('POST', '/api/roles', { token: admin, body: { name: 'a\u0000b', permissions: [] } });
      assertErrorEnvelope(res, 400, 'E4001');
      assert.match(res.body.err, /^name: /);
      const nested = await t.request('POST', '/api/organizations', {
        token: admin,
        body: { name: 'org', description: 'x\u0000' },
      });
      assertErrorEnvelope(nested, 400, 'E4001');
      assert.match(nested.body.err, /^description: /);
      assertErrorEnvelope(
        await t.request('GET', `/api/users?search=${encodeURIComponent('a\u0000')}`, { token: admin }),
        400,
        'E4001',
      );
      // The same on /trpc, for a mutation and a query: nothing is stored.
      const roleName = `nul-${Date.now()}`;
      const viaTrpc = [
        await t.request('POST', '/trpc/roles.create', {
          token: admin,
          body: { name: `${roleName}\u0000`, permissions: [] },
        }),
        await t.request('GET', `/trpc/users.list?input=${encodeURIComponent(JSON.stringify({ search: 'a\u0000' }))}`, {
          token: admin,
        }),
      ];
      for (const res of viaTrpc) {
        assert.equal(res.status, 400, res.text);
        assert.equal(res.body.error.appCode, 'E4001', res.text);
      }
      assert.match(viaTrpc[0]!.body.error.err, /^name: /);
      assert.match(viaTrpc[1]!.body.error.err, /^search: /);
      const roles = await t.request('GET', `/api/roles?search=${roleName}`, { token: admin });
      assert.equal(roles.status, 200, roles.text);
      assert.equal(roles.body.data.length, 0);
    });

    test('/trpc errors carry the app code and no stack, whatever NODE_ENV says', async () => {
      const previous = process.env.NODE_ENV;
      process.env.NODE_ENV = 'development';
      try {
        const cases: [string, string, object, number, string][] = [
          ['GET', '/trpc/auth.me', {}, 401, 'E4011'],
          ['POST', '/trpc/auth.login', { raw: '{bad' }, 400, 'E4001'],
          ['POST', '/trpc/auth.login', { body: { username: 5 } }, 400, 'E4001'],
          ['GET', '/trpc/auth.login', {}, 404, 'E4041'],
          ['GET', '/trpc/no.such.procedure', {}, 404, 'E4041'],
          [
            'GET',
            `/trpc/users.get?input=${encodeURIComponent(JSON.stringify({ id: 'not-a-uuid' }))}`,
            { token: admin },
            400,
            'E4001',
          ],
        ];
        for (const [method, url, opts, status, code] of cases) {
          const res = await t.request(method, url, opts);
          assert.equal(res.status, status, `${method} ${url}: ${res.text}`);
          assert.equal(res.body.error.appCode, code, `${method} ${url}: ${res.text}`);
          assert.ok(!hasKeyDeep(res.body, 'stack'), `stack in ${res.text}`);
          for (const leak of LEAKS) assert.doesNotMatch(res.text, leak, `${method} ${url}: ${res.text}`);
        }
      } finally {
        process.env.NODE_ENV = previous;
      }
    });

    test('without server.trust_proxy, X-Forwarded-For is ignored', async () => {
      await t.request('POST', '/api/auth/login', {
        body: { username: 'admin', password: 'wrong-password' },
        headers: { 'x-forwarded-for': '203.0.113.9' },
      });
      const logs = await t.request('GET', '/api/audit-logs?action=login_failed', { token: admin });
      assert.equal(logs.status, 200, logs.text);
      assert.ok(logs.body.data.length >= 1);
      assert.notEqual(logs.body.data[0].ip, '203.0.113.9');
    });
  });

  describe(`http with server options [${lane.name}]`, () => {
    const logs = captureLogs('info');
    const serverErrors = () => logs.lines.filter((l) => (l.level as number) >= 50);
    let t: TestConsole;
    let admin: string;
    before(async () => {
      // Short enough to test the timeout against a 4 s handler, long enough for a login (a scrypt hash and its
      // account reads) on a loaded machine, ClickHouse included.
      t = await startConsole(
        lane,
        {
          server: {
            trust_proxy: true,
            cors_origins: ['https://admin.example', 'https://ops.example'],
            write_timeout: '1500ms',
          },
        },
        { logger: logs.logger },
      );
      addSlowRoute(t.c.http);
      admin = await t.login();
    });
    after(async () => t.close());

    test('server.cors_origins restricts which origins are allowed', async () => {
      const preflight = (origin: string) =>
        t.request('OPTIONS', '/api/users', {
          headers: {
            origin,
            'access-control-request-method': 'GET',
            'access-control-request-headers': 'authorization',
          },
        });
      assert.equal(
        (await preflight('https://ops.example')).headers['access-control-allow-origin'],
        'https://ops.example',
      );
      assert.equal(
        (await preflight('https://admin.example')).headers['access-control-allow-origin'],
        'https://admin.example',
      );
      assert.equal((await preflight('https://evil.example')).headers['access-control-allow-origin'], undefined);
      const simple = await t.request('GET', '/api/auth/me', {
        token: admin,
        headers: { origin: 'https://evil.example' },
      });
      assert.equal(simple.headers['access-control-allow-origin'], undefined);
    });

    test('server.trust_proxy: X-Forwarded-For gives the client IP', async () => {
      await t.request('POST', '/api/auth/login', {
        body: { username: 'admin', password: 'wrong-password' },
        headers: { 'x-forwarded-for': '203.0.113.9' },
      });
      const logs = await t.request('GET', '/api/audit-logs?action=login_failed', { token: admin });
      assert.equal(logs.status, 200, logs.text);
      assert.equal(logs.body.data[0].ip, '203.0.113.9');
    });

    test('server.write_timeout: a handler slower than it is answered 503 E5031; faster ones are not', async () => {
      const started = Date.now();
      assertErrorEnvelope(await t.request('GET', '/api/test/slow?ms=4000'), 503, 'E5031');
      assert.ok(Date.now() - started < 3500, 'answered at the timeout, not when the handler ended');
      const fast = await t.request('GET', '/api/test/slow?ms=0');
      assert.equal(fast.status, 200);
      assert.equal((await t.request('GET', '/api/auth/me', { token: admin })).status, 200);
    });

    test('a body or input nested deeper than 64 levels is 400 E4001 on /api and /trpc, never a stack overflow', async () => {
      // In this console: the other one's body limit is smaller than these bodies.
      const deepObject = (levels: number) => '{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1);
      const deepArray = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
      const login = (password: string) => `{"username":"admin","password":${password}}`;
      for (const [url, raw, token] of [
        ['/api/auth/login', deepObject(10_000), undefined],
        ['/api/auth/login', login(deepArray(10_000)), undefined],
        ['/api/users', deepObject(10_000), admin],
        ['/api/auth/login', login(deepArray(64)), undefined],
      ] as const) {
        const res = await t.request('POST', url, { raw, token });
        assertErrorEnvelope(res, 400, 'E4001');
        assert.match(res.body.err, /^body: .*64/, res.text);
      }
      // 64 levels in all pass the depth check; the field is then refused for its type.
      const limit = await t.request('POST', '/api/auth/login', { raw: login(deepArray(63)) });
      assertErrorEnvelope(limit, 400, 'E4001');
      assert.match(limit.body.err, /^password: /, limit.text);

      const trpcError = (res: Reply, field: string) => {
        assert.equal(res.status, 400, res.text);
        assert.equal(res.body.error.appCode, 'E4001', res.text);
        assert.match(res.body.error.err, new RegExp(`^${field}: .*64`), res.text);
      };
      // A body counts a member per level: 4,000 levels twice stay within MAX_JSON_MEMBERS, so the depth guard answers.
      const levels = 4_000;
      trpcError(await t.request('POST', '/trpc/auth.login', { raw: deepObject(levels) }), 'a');
      trpcError(await t.request('POST', '/trpc/auth.login', { raw: login(deepArray(levels)) }), 'password');
      const search = encodeURIComponent(`{"search":${deepArray(10_000)}}`);
      trpcError(await t.request('GET', `/trpc/users.list?input=${search}`, { token: admin }), 'search');
      const batchGet = await t.request(
        'GET',
        `/trpc/users.list,users.list?batch=1&input=${encodeURIComponent(`{"0":{"search":${deepArray(10_000)}},"1":{}}`)}`,
        { token: admin },
      );
      assert.equal(batchGet.body[0].error.appCode, 'E4001', batchGet.text);
      assert.match(batchGet.body[0].error.err, /^search: /);
      assert.equal(batchGet.body[1].result.data.total >= 1, true, batchGet.text);
      const batchPost = await t.request('POST', '/trpc/auth.login,auth.login?batch=1', {
        raw: `{"0":${login(deepArray(levels))},"1":${deepObject(levels)}}`,
      });
      for (const [i, field] of [
        [0, 'password'],
        [1, 'a'],
      ] as const) {
        assert.equal(batchPost.body[i].error.appCode, 'E4001', batchPost.text);
        assert.match(batchPost.body[i].error.err, new RegExp(`^${field}: .*64`));
      }
    });

    test('client errors are not logged as server errors, on /api or /trpc', async () => {
      const before = serverErrors().length;
      const wrong = { body: { username: 'admin', password: 'wrong-password' } };
      assert.equal((await t.request('POST', '/api/auth/login', wrong)).status, 401);
      assert.equal((await t.request('POST', '/trpc/auth.login', wrong)).status, 401);
      assert.equal((await t.request('GET', '/trpc/auth.me')).status, 401);
      assert.equal((await t.request('POST', '/trpc/auth.login', { body: { username: 5 } })).status, 400);
      assert.equal((await t.request('GET', '/trpc/no.such.procedure')).status, 404);
      assert.equal(
        (await t.request('POST', '/trpc/roles.create', { token: admin, body: { name: 'x\u0000', permissions: [] } }))
          .status,
        400,
      );
      assert.deepEqual(serverErrors().slice(before), []);
    });

    test('an internal failure is 500 E5001 without SQL, paths or stack, on /api and /trpc', async () => {
      // Last in this console: removes a table from under it.
      await t.c.db.knex.schema.dropTable(t.c.db.t.auditLogs);
      assertErrorEnvelope(await t.request('GET', '/api/audit-logs', { token: admin }), 500, 'E5001');
      const trpc = await t.request('GET', `/trpc/audit.list?input=${encodeURIComponent('{}')}`, { token: admin });
      assert.equal(trpc.status, 500, trpc.text);
      assert.equal(trpc.body.error.appCode, 'E5001');
      assert.ok(!hasKeyDeep(trpc.body, 'stack'), trpc.text);
      for (const leak of LEAKS) assert.doesNotMatch(trpc.text, leak, trpc.text);
      // Both are logged, with the cause and its stack.
      const logged = serverErrors().map((l) => l.msg);
      assert.ok(logged.includes('request failed') && logged.includes('trpc request failed'), JSON.stringify(logged));
      assert.ok(serverErrors().every((l) => typeof (l.err as { stack?: unknown } | undefined)?.stack === 'string'));
    });
  });

  describe(`graceful shutdown [${lane.name}]`, () => {
    // The owner holds the tables; each node under test shares them, so closing a node drops nothing.
    let owner: TestConsole;
    before(async () => {
      owner = await startConsole(lane);
    });
    after(async () => owner.close());

    const node = async (shutdown: string) => {
      const n = await startConsole(
        lane,
        { database: owner.database, server: { shutdown_timeout: shutdown, write_timeout: '1m' } },
        {},
        { keepTables: true },
      );
      const slow = addSlowRoute(n.c.http);
      const { port } = await n.c.listen();
      return { n, slow, url: `http://127.0.0.1:${port}` };
    };

    test('close() lets an in-flight request finish, then stops at once; new connections are refused', async () => {
      const { n, slow, url } = await node('5s');
      try {
        const arrived = slow.arrived();
        const inFlight = fetch(`${url}/api/test/slow?ms=500`).then(async (r) => ({
          status: r.status,
          body: (await r.json()) as { data: { slept: number } },
          at: Date.now(),
        }));
        await arrived;
        let closedAt = 0;
        const closing = n.c.close().then(() => (closedAt = Date.now()));
        await new Promise((resolve) => setTimeout(resolve, 200));
        assert.equal(closedAt, 0, 'close waits for the request in flight');
        const answered = await inFlight;
        assert.equal(answered.status, 200);
        assert.equal(answered.body.data.slept, 500);
        await closing;
        // fetch keeps its connection alive; shutdown must not wait for the client to drop it.
        assert.ok(closedAt - answered.at < 2000, `close ended ${closedAt - answered.at} ms after the answer`);
        await assert.rejects(fetch(`${url}/healthz`), 'the listener is gone');
      } finally {
        await n.close();
      }
    });

    test('an answer given during shutdown ends its kept-alive connection', async () => {
      const { n, slow, url } = await node('5s');
      try {
        const socket = connect(Number(new URL(url).port), '127.0.0.1');
        let raw = '';
        socket.on('data', (d) => (raw += d));
        const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
        const arrived = slow.arrived();
        socket.write('GET /api/test/slow?ms=300 HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
        await arrived;
        const started = Date.now();
        const closing = n.c.close();
        await ended;
        await closing;
        assert.match(raw, /^HTTP\/1\.1 200/, raw);
        assert.match(raw, /\r\nconnection: close\r\n/i, raw);
        assert.ok(Date.now() - started < 2000, 'the server closed the connection, not the shutdown timeout');
      } finally {
        await n.close();
      }
    });

    test('close() answers every request sent before it, even unread; refuses new connections; 503s new requests on kept-alive ones', async () => {
      const n = await startConsole(
        lane,
        { database: owner.database, server: { shutdown_timeout: '20s', write_timeout: '1m' } },
        {},
        { keepTables: true },
      );
      const held = addHeldRoute(n.c.http);
      const { port } = await n.c.listen();
      try {
        const kept = await rawConnection(port);
        kept.send('/healthz');
        await kept.answers(1);
        const inFlight = await Promise.all([0, 1, 2].map(() => rawConnection(port)));
        for (const c of inFlight) c.send('/api/test/held');
        await held.arrived(3);
        const fresh = await Promise.all([0, 1, 2].map(() => rawConnection(port)));
        while (
          (await new Promise<number>((resolve, reject) =>
            n.c.http.server.getConnections((e, count) => (e ? reject(e) : resolve(count))),
          )) < 7
        )
          await new Promise((r) => setTimeout(r, 5));
        // Sent, and close() begun, in one go: the server has not read these requests yet when it starts to drain.
        fresh[0]!.send('/api/test/held');
        fresh[1]!.send('/readyz');
        fresh[2]!.send('/healthz');
        const closing = n.c.close();

        while (n.c.http.server.listening) await new Promise((r) => setTimeout(r, 5));
        await assert.rejects(rawConnection(port), /ECONNREFUSED/, 'no new connections once draining');
        kept.send('/api/users');
        await kept.closed;
        const refused = kept.text().split(/(?=HTTP\/1\.1 \d{3} )/)[1] ?? '';
        assert.match(refused, /^HTTP\/1\.1 503 /, kept.text());
        assert.match(refused, /\r\nconnection: close\r\n/i);
        assert.equal(JSON.parse(refused.slice(refused.indexOf('\r\n\r\n') + 4)).code, 'E5031', refused);

        held.release();
        await closing;
        await Promise.all([...inFlight, ...fresh].map((c) => c.closed));
        for (const c of [...inFlight, fresh[0]!, fresh[2]!]) {
          assert.match(c.text(), /^HTTP\/1\.1 200 /, c.text());
          assert.match(c.text(), /\r\nconnection: close\r\n/i, c.text());
        }
        assert.match(fresh[1]!.text(), /^HTTP\/1\.1 503 [^]*"status":"draining"/, '/readyz answers 503 while draining');
      } finally {
        held.release();
        await n.close();
      }
    });

    test('a request still running after server.shutdown_timeout is cut', async () => {
      const { n, slow, url } = await node('300ms');
      try {
        const arrived = slow.arrived();
        const inFlight = fetch(`${url}/api/test/slow?ms=20000`).then(
          () => 'answered',
          () => 'cut',
        );
        await arrived;
        const started = Date.now();
        await n.c.close();
        const took = Date.now() - started;
        assert.equal(await inFlight, 'cut');
        assert.ok(took >= 250, `waited for the timeout first (${took} ms)`);
        assert.ok(took < 5000, `stopped soon after the timeout (${took} ms)`);
      } finally {
        await n.close();
      }
    });

    test('/readyz is 503 when the database is unreachable', async () => {
      const n = await startConsole(lane, { database: owner.database }, {}, { keepTables: true });
      try {
        assert.equal((await n.request('GET', '/readyz')).status, 200);
        await n.c.db.close();
        const res = await n.request('GET', '/readyz');
        assert.equal(res.status, 503);
        assert.equal((await n.request('GET', '/healthz')).status, 200, 'the process itself is alive');
      } finally {
        await n.close();
      }
    });
  });
}

describe('output validation', () => {
  test('a procedure answering outside its output schema is a 500 without details, not a 400', async () => {
    const zodError = z.object({ id: z.uuid() }).safeParse({ id: 'x' }).error!;
    const output = toErrorBody(
      new TRPCError({ code: 'INTERNAL_SERVER_ERROR', message: 'Output validation failed', cause: zodError }),
      'en',
    );
    assert.deepEqual(output, { status: 500, code: 'E5001', err: 'internal error' });
    const input = toErrorBody(new TRPCError({ code: 'BAD_REQUEST', cause: zodError }), 'en');
    assert.equal(input.status, 400);
    assert.equal(input.err, 'id: must be a UUID');
  });
});

describe('malformed URLs [sqlite]', () => {
  test('a bad percent-escape or an over-long path parameter gets the envelope, not a framework error', async () => {
    const t = await startConsole(lanes()[0]!);
    try {
      const token = await t.login();
      for (const url of ['/api/files/%zz', `/api/users/${'x'.repeat(150)}`, `/trpc/${'x'.repeat(150)}`]) {
        const res = await t.request('GET', url, { token });
        assert.equal(res.status, 400, url);
        assert.equal(res.body.code, 'E4001', url);
        assert.doesNotMatch(res.text, /FST_/);
      }
    } finally {
      await t.close();
    }
  });
});

describe('JSON text limits', () => {
  const depth = (text: string, limit: number) => jsonTextExceeds(text, { depth: limit, members: Infinity });
  const members = (text: string, limit: number) => jsonTextExceeds(text, { depth: Infinity, members: limit });

  test('brackets inside strings, escaped quotes included, do not count; the limit is inclusive', () => {
    const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
    assert.equal(depth(nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH), undefined);
    assert.equal(depth(nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH), 'depth');
    assert.equal(depth(JSON.stringify({ a: `\"${'['.repeat(100)}`, b: '{{\\' }), 2), undefined);
    // An escaped backslash ends before the quote, which closes the string.
    assert.equal(depth(`{"a":"\\\\"${'['.repeat(3)}`, 2), 'depth');
  });

  test('members are every object member and array item at any depth; empty containers, strings and spacing add none', () => {
    const count = (value: unknown) => {
      const text = typeof value === 'string' ? value : JSON.stringify(value);
      let n = 0;
      while (members(text, n) === 'members') n++;
      return n;
    };
    assert.equal(count({}), 0);
    assert.equal(count([]), 0);
    assert.equal(count(' [ ] '), 0);
    assert.equal(count('5'), 0);
    assert.equal(count([[]]), 1);
    assert.equal(count({ a: 1, b: [1, 2, 3], c: { d: {} } }), 7);
    assert.equal(count({ 'a,b': 'c,d,[{' }), 1);
    assert.equal(count('{ "a" : [ 1 , 2 ] ,\n "b" : { } }'), 4);
    assert.equal(count(`["\\\\",","]`), 2);
    // Stops at the first member past the limit, however long the rest.
    assert.equal(members(`[${'0,'.repeat(1_000_000)}0]`, MAX_JSON_MEMBERS), 'members');
  });

  test('guardInput walks a value nested 100,000 levels without recursion and names the top field', () => {
    let deep: unknown = {};
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    assert.throws(() => guardInput({ ok: 1, a: deep }), /^Error: a: .*64/);
    let limit: unknown = 'x\u0000';
    for (let i = 0; i < MAX_JSON_DEPTH - 1; i++) limit = [limit];
    assert.throws(
      () => guardInput(limit),
      /^Error: 0\.0\.0.*NUL/,
      'the deepest level allowed is still walked for NUL characters',
    );
  });
});

/**
 * Sends `head`, then up to `bodyBytes` of body in 16 KB pieces (as chunks when the head says chunked), each
 * after the last has drained, until the server closes the connection or stops reading. What the server
 * answered, and how many bytes it read from the connection in all, counted on its own side.
 */
async function sendLargeBody(server: Server, port: number, head: string, bodyBytes: number) {
  const serverSide = new Promise<Socket>((resolve) => server.once('connection', resolve));
  const socket = connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (d) => (text += d));
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  const peer = await serverSide;
  const peerClosed = new Promise<void>((resolve) => peer.on('close', () => resolve()));
  const chunked = /transfer-encoding: chunked/i.test(head);
  const piece = Buffer.alloc(16_384, 'x');
  const frame = chunked
    ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')])
    : piece;
  const stalled = () => new Promise<'stalled'>((resolve) => setTimeout(() => resolve('stalled'), 2000).unref());
  socket.write(head);
  for (let sent = 0; sent < bodyBytes && !socket.destroyed; sent += piece.length) {
    if (socket.write(frame)) continue;
    const drained = new Promise<'drained'>((resolve) => socket.once('drain', () => resolve('drained')));
    if ((await Promise.race([drained, closed.then(() => 'closed'), stalled()])) !== 'drained') break;
  }
  await Promise.race([peerClosed, new Promise((resolve) => setTimeout(resolve, 500))]);
  const bytesRead = peer.bytesRead;
  socket.destroy();
  await closed;
  return { text, bytesRead, serverClosed: peer.destroyed };
}

/** Sends `request` on a new connection and resolves with what came back once the server closed it. */
async function rawExchange(port: number, request: string): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (d) => (text += d));
  socket.on('error', () => {});
  socket.write(request);
  await new Promise<void>((resolve) => socket.on('close', () => resolve()));
  return text;
}

/** The JSON body of a raw HTTP answer. */
const rawBody = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));

describe('request bounds [sqlite]', () => {
  const LIMIT = 262_144;
  const logs = captureLogs('info');
  const serverErrors = () => logs.lines.filter((l) => (l.level as number) >= 50);
  let t: TestConsole;
  let port: number;
  let admin: string;
  before(async () => {
    t = await startConsole(lanes()[0]!, { server: { max_upload_size: LIMIT } }, { logger: logs.logger });
    port = (await t.c.listen()).port;
    admin = await t.login();
  });
  after(async () => t.close());

  test('a body over server.max_upload_size is refused with 400 E4001 on any route and content type, and no more of it is read', async () => {
    const server = t.c.http.server;
    const cases = [
      ['POST /trpc/any.thing', 'multipart/form-data; boundary=x', `Content-Length: ${200 * 1024 * 1024}`],
      ['POST /trpc/auth.login', 'multipart/form-data; boundary=x', 'Transfer-Encoding: chunked'],
      ['POST /trpc/auth.login', 'application/json', 'Transfer-Encoding: chunked'],
      ['POST /api/auth/login', 'application/json', 'Transfer-Encoding: chunked'],
      ['POST /api/auth/login', 'application/json', `Content-Length: ${8 * 1024 * 1024}`],
      ['PUT /api/users/x', 'application/octet-stream', `Content-Length: ${8 * 1024 * 1024}`],
      ['POST /healthz', 'text/plain', 'Transfer-Encoding: chunked'],
    ];
    for (const [line, type, framing] of cases) {
      const head = `${line} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\n${framing}\r\n\r\n`;
      const { text, bytesRead, serverClosed } = await sendLargeBody(server, port, head, 8 * 1024 * 1024);
      assert.match(text, /^HTTP\/1\.1 400 /, `${line} ${type} ${framing}: ${text}`);
      assert.match(text, /"E4001"/, text);
      // Headers, and what was in flight when the answer left (about 60 KB here), against 8 MB sent.
      assert.ok(bytesRead < LIMIT + 256 * 1024, `${line} ${type} ${framing}: the server read ${bytesRead} bytes`);
      assert.ok(serverClosed, `${line} ${type} ${framing}: the server closed the connection`);
    }
    assert.deepEqual(serverErrors(), []);
  });

  test('multipart under the limit still reaches tRPC, which refuses it as input', async () => {
    const body = '--x\r\nContent-Disposition: form-data; name="username"\r\n\r\nadmin\r\n--x--\r\n';
    const answer = await rawExchange(
      port,
      'POST /trpc/auth.login HTTP/1.1\r\nHost: x\r\nConnection: close\r\n' +
        `Content-Type: multipart/form-data; boundary=x\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    assert.match(answer, /^HTTP\/1\.1 400 /, answer);
    assert.match(answer, /"appCode":"E4001"/, answer);
  });

  test(`a JSON body with more than ${MAX_JSON_MEMBERS} members is refused before it is parsed, on /api and /trpc`, async () => {
    const zeros = (n: number) => `[${Array(n).fill('0').join(',')}]`;
    // username, password, pad and the pad's items.
    const login = (items: number) => `{"username":"admin","password":"x","pad":${zeros(items)}}`;
    const keys = `{${Array.from({ length: MAX_JSON_MEMBERS + 1 }, (_, i) => `"k${i}":0`).join(',')}}`;
    for (const [url, raw, token, headers] of [
      ['/api/auth/login', login(MAX_JSON_MEMBERS - 2), undefined, {}],
      ['/api/roles', keys, admin, {}],
      ['/api/roles', keys, admin, { 'idempotency-key': 'members-1' }],
      ['/trpc/auth.login', login(MAX_JSON_MEMBERS - 2), undefined, {}],
      ['/trpc/roles.create', keys, admin, { 'idempotency-key': 'members-2' }],
      ['/trpc/auth.login,auth.login?batch=1', `{"0":${keys},"1":{}}`, undefined, {}],
    ] as const) {
      const res = await t.request('POST', url, { raw, token, headers });
      assertErrorEnvelope(res, 400, 'E4001');
      assert.match(res.body.err, new RegExp(`^body: .*${MAX_JSON_MEMBERS}`), `${url}: ${res.text}`);
    }
    // Exactly the limit passes this check; the login is then refused for its unknown field or its password.
    for (const url of ['/api/auth/login', '/trpc/auth.login']) {
      const res = await t.request('POST', url, { raw: login(MAX_JSON_MEMBERS - 3) });
      assert.ok(res.status === 400 || res.status === 401, res.text);
      assert.doesNotMatch(res.text, /members/, res.text);
    }
  });

  test('HEAD on /trpc is 404 E4041 like any method tRPC does not serve, never a 500 or a logged failure', async () => {
    for (const url of [
      '/trpc/users.list',
      '/trpc/auth.me',
      '/trpc/no.such.thing',
      '/trpc/users.list,auth.me?batch=1',
    ]) {
      const res = await t.request('HEAD', url);
      assert.equal(res.status, 404, url);
      assert.match(String(res.headers['content-type']), /application\/json/, url);
      const withToken = await t.request('HEAD', url, { token: admin });
      assert.equal(withToken.status, 404, url);
    }
    assert.deepEqual(serverErrors(), []);
  });

  test('an oversized header block is 431 E4311 and a malformed request 400 E4001, both in the envelope', async () => {
    const big = await rawExchange(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assert.match(big, /^HTTP\/1\.1 431 /, big);
    assert.equal(rawBody(big).code, 'E4311', big);
    assert.equal(typeof rawBody(big).err, 'string');
    const malformed = await rawExchange(port, 'NOT HTTP AT ALL\r\n\r\n');
    assert.match(malformed, /^HTTP\/1\.1 400 /, malformed);
    assert.equal(rawBody(malformed).code, 'E4001', malformed);
  });
});

describe('read timeout and connection limit [sqlite]', () => {
  let t: TestConsole;
  let port: number;
  before(async () => {
    t = await startConsole(lanes()[0]!, { server: { read_timeout: '300ms', write_timeout: '5s', max_connections: 2 } });
    port = (await t.c.listen()).port;
  });
  after(async () => t.close());

  const openConnections = () =>
    new Promise<number>((resolve, reject) => t.c.http.server.getConnections((e, n) => (e ? reject(e) : resolve(n))));

  test('a body sent a byte at a time is answered 408 E4081 and its connection closed at server.read_timeout', async () => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (d) => (text += d));
    socket.on('error', () => {});
    const started = Date.now();
    const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now() - started)));
    socket.write(
      'POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{',
    );
    const drip = setInterval(() => socket.destroyed || socket.write(' '), 50);
    const took = await Promise.race([closed, new Promise<number>((resolve) => setTimeout(() => resolve(-1), 4000))]);
    clearInterval(drip);
    socket.destroy();
    assert.ok(took > 0, `the connection was still open after 4 s (read_timeout 300 ms): ${text}`);
    assert.ok(took >= 250, `closed at ${took} ms, before the read timeout`);
    assert.match(text, /^HTTP\/1\.1 408 /, text);
    assert.equal(rawBody(text).code, 'E4081', text);
  });

  test('server.max_connections: a connection past the limit is closed unanswered until one ends', async () => {
    while ((await openConnections()) > 0) await new Promise((r) => setTimeout(r, 10));
    const kept = await Promise.all([rawConnection(port), rawConnection(port)]);
    for (const c of kept) c.send('/healthz');
    await Promise.all(kept.map((c) => c.answers(1)));
    const refused = await rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.equal(refused, '', 'no answer past the limit');
    kept[0]!.socket.destroy();
    while ((await openConnections()) > 1) await new Promise((r) => setTimeout(r, 10));
    const admitted = await rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.match(admitted, /^HTTP\/1\.1 200 /, admitted);
    kept[1]!.socket.destroy();
  });
});
