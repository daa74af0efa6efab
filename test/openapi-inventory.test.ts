import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { lanes, startConsole, type Reply, type TestConsole } from './support/harness.ts';
import { operations, type Operation } from './support/openapi-doc.ts';

/**
 * README "API overview": the only operations reachable without a token. (`GET /files/{fileKey}` is public only with a
 * valid signature, so without one it belongs with the rest: 401.)
 */
const PUBLIC = new Set([
  'POST /auth/login',
  'POST /auth/password-reset/request',
  'POST /auth/password-reset/confirm',
  'GET /auth/oauth/providers',
  'GET /auth/oauth/{name}/authorize',
  'GET /auth/oauth/{name}/callback',
  'POST /auth/oauth/{name}/callback',
  'GET /openapi.json',
]);

type Json = Record<string, any>;

/** A concrete URL for an operation: every path parameter becomes a random UUID (ids are UUIDs, other keys free strings). */
const concrete = (base: string, path: string) => base + path.replace(/\{\w+\}/g, () => randomUUID());

const successOf = (op: Json): [string, Json] => {
  const ok = Object.entries(op.responses as Json).filter(([status]) => status.startsWith('2'));
  assert.equal(ok.length, 1, `one success response: ${Object.keys(op.responses).join(', ')}`);
  return [ok[0]![0], ok[0]![1].content['application/json'].schema];
};

for (const lane of lanes()) {
  describe(`openapi inventory [${lane.name}]`, () => {
    let t: TestConsole;
    let doc: Json;
    let base: string;
    let ops: Operation[];
    let routeNotFound: Json;
    const call = (o: Operation, token?: string): Promise<Reply> =>
      t.request(o.method, concrete(base, o.path), {
        token,
        body: o.method === 'POST' || o.method === 'PUT' ? {} : undefined,
      });

    before(async () => {
      t = await startConsole(lane);
      const res = await t.request('GET', '/api/openapi.json');
      assert.equal(res.status, 200);
      doc = res.body;
      base = (doc.servers as { url: string }[])[0]!.url.replace(/\/$/, '');
      ops = operations(doc);
      routeNotFound = (await t.request('GET', '/api/__no_such_route__')).body;
    });
    after(async () => t.close());

    test('the document is OpenAPI 3.1 for /api, with the documented operations', () => {
      assert.match(doc.openapi, /^3\.1\./);
      assert.equal(base, '/api');
      assert.equal(doc.info.title, 'Console API');
      const keys = new Set(ops.map((o) => o.key));
      for (const expected of [
        'POST /auth/login',
        'GET /auth/me',
        'GET /users',
        'POST /users',
        'GET /users/{id}',
        'PUT /users/{id}',
        'DELETE /users/{id}',
        'GET /roles',
        'POST /roles',
        'GET /permissions',
        'GET /system/settings',
        'PUT /system/settings',
        'GET /audit-logs',
      ]) {
        assert.ok(keys.has(expected), `${expected} is documented`);
      }
    });

    test('every path in the document is served (none answers route-not-found)', async () => {
      assert.equal(routeNotFound.code, 'E4041');
      for (const o of ops) {
        const res = await call(o);
        // Compared on code and message: every body also carries its own request's trace_id.
        assert.ok(
          !(res.body.code === routeNotFound.code && res.body.err === routeNotFound.err),
          `${o.key} is not served`,
        );
      }
    });

    test('only the documented public operations are open; every other answers 401 E4011 without a token or with a bad one', async () => {
      for (const o of ops) {
        const documentedPublic = Array.isArray(o.op.security) && o.op.security.length === 0;
        assert.equal(
          documentedPublic,
          PUBLIC.has(o.key),
          `${o.key}: documented ${documentedPublic ? 'public' : 'with bearer auth'}`,
        );
        if (PUBLIC.has(o.key)) continue;
        // (A signed file link documents `{}` beside the bearer scheme; without a signature it still needs a token.)
        assert.ok(
          (o.op.security as Json[]).some((req) => 'bearerAuth' in req),
          `${o.key} documents bearer auth`,
        );
        for (const token of [undefined, 'not-a-jwt']) {
          const res = await call(o, token);
          assert.equal(res.status, 401, `${o.key} (token ${token}): ${res.text}`);
          assert.equal(res.body.code, 'E4011', `${o.key}: ${res.text}`);
        }
      }
    });

    test('every operation with x-permission answers 403 E4031 to a user holding no permission', async () => {
      const { token } = await t.userWith([]);
      const guarded = ops.filter((o) => o.op['x-permission']);
      assert.ok(guarded.length >= 10, `${guarded.length} guarded operations`);
      for (const o of guarded) {
        const res = await call(o, token);
        assert.equal(res.status, 403, `${o.key}: ${res.text}`);
        assert.equal(res.body.code, 'E4031', `${o.key}: ${res.text}`);
        assert.ok(o.op.responses['403'], `${o.key} documents its 403`);
      }
    });

    test('x-permission names a registered permission (or admin)', async () => {
      const admin = await t.login();
      const codes = new Set(
        (await t.request('GET', '/api/permissions', { token: admin })).body.data.map((p: { code: string }) => p.code),
      );
      for (const o of ops.filter((x) => x.op['x-permission'])) {
        const p = o.op['x-permission'] as string;
        assert.ok(p === 'admin' || codes.has(p), `${o.key}: ${p}`);
      }
    });

    test('operations without x-permission need a login only', async () => {
      for (const o of ops.filter((x) => !x.op['x-permission'] && !PUBLIC.has(x.key))) {
        // A fresh user each time: one of them is logout.
        const { token } = await t.userWith([]);
        const res = await call(o, token);
        assert.ok(![401, 403].includes(res.status), `${o.key}: ${res.status} ${res.text}`);
      }
    });

    test('success answers are documented in the envelope; creates are 201', () => {
      const listPaths = new Set<string>();
      for (const o of ops) {
        // A browser step of OAuth answers only a redirect: documented as a 302 with its Location.
        if (!Object.keys(o.op.responses).some((s) => s.startsWith('2'))) {
          assert.ok(o.op.responses['302']?.headers?.Location, `${o.key}: a success response or a documented redirect`);
          continue;
        }
        // A stream answers events or records, not an envelope (its errors before the stream are envelopes).
        const content = o.op.responses['200']?.content;
        if (content?.['text/event-stream'] || content?.['application/x-ndjson']) continue;
        const [status, schema] = successOf(o.op);
        assert.deepEqual(schema.properties?.code, { type: 'string', const: '0' }, `${o.key}: code "0"`);
        assert.ok(
          schema.required?.includes('code') && schema.required.includes('data'),
          `${o.key}: code and data required`,
        );
        if (schema.properties.total) {
          assert.equal(o.method, 'GET', o.key);
          assert.equal(schema.properties.data.type, 'array', `${o.key}: a list`);
          for (const k of ['total', 'current', 'page_size']) assert.ok(schema.required.includes(k), `${o.key}: ${k}`);
          listPaths.add(o.path);
        }
        assert.ok(status === '200' || (status === '201' && o.method === 'POST'), `${o.key}: ${status}`);
      }
      // A POST to a listed collection creates a member of it.
      const creates = ops.filter((o) => o.method === 'POST' && listPaths.has(o.path));
      assert.ok(creates.some((o) => o.path === '/users') && creates.some((o) => o.path === '/roles'));
      for (const o of creates) assert.equal(successOf(o.op)[0], '201', `${o.key} is a create`);
      const errorSchema = doc.components.schemas.Error;
      assert.deepEqual(errorSchema.required, ['code', 'err']);
    });

    test('a documented create really answers 201 with the enveloped object', async () => {
      const admin = await t.login();
      const res = await t.request('POST', '/api/roles', {
        token: admin,
        body: { name: 'inventory-role', description: 'd', permissions: [] },
      });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.code, '0');
      assert.equal(res.body.data.name, 'inventory-role');
    });
  });
}
