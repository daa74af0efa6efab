// /trpc speaks tRPC's protocol with the runner /api uses (server/http/trpc-routes.ts). These tests hold it to
// tRPC itself: the real client through each of its HTTP links, and every procedure through REST, /trpc and
// tRPC's own caller with the same answers, so that a tRPC upgrade that changes either fails here.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  createTRPCClient,
  httpBatchLink,
  httpBatchStreamLink,
  httpLink,
  TRPCClientError,
  type TRPCLink,
} from '@trpc/client';
import type { AnyTRPCProcedure } from '@trpc/server';
import type { AppRouter } from 'console-admin/client';
import { appRouter } from '../routers/app-router.ts';
import { toErrorBody } from '../routers/common/error-body.ts';
import type { Context } from '../routers/common/context.ts';
import type { Meta } from '../routers/common/trpc.ts';
import { ADMIN_PASSWORD, lanes, startConsole, type TestConsole } from './support/harness.ts';

type LinkFactory = (opts: {
  url: string;
  headers: () => Record<string, string>;
  fetch: typeof fetch;
}) => TRPCLink<AppRouter>;
const LINKS: Record<string, LinkFactory> = { httpLink, httpBatchLink, httpBatchStreamLink };

// Queries with no REST route, and why they are compared between /trpc and the caller only.
const NO_REST: Record<string, string> = { 'files.sign': 'a signed URL names the moment it was signed' };

/** What a failed call says, whichever transport carried it. */
function failureOf(error: unknown) {
  if (error instanceof TRPCClientError)
    return {
      status: error.data?.httpStatus as number,
      code: (error.shape as { appCode: string }).appCode,
      message: error.message,
    };
  const body = toErrorBody(error, 'en');
  return { status: body.status, code: body.code, message: body.err };
}

for (const lane of lanes()) {
  describe(`tRPC protocol [${lane.name}]`, () => {
    let t: TestConsole;
    let base: string;
    let token: string;
    const ids: Record<string, string> = {};
    before(async () => {
      t = await startConsole(lane);
      base = `http://127.0.0.1:${(await t.c.listen()).port}`;
      token = await t.login('admin', ADMIN_PASSWORD);
      const auth = { token };
      ids.user = (await t.request('GET', '/api/auth/me', auth)).body.data.id;
      ids.role = (await t.request('GET', '/api/roles', auth)).body.data[0].id;
      ids.org = (await t.request('POST', '/api/organizations', { ...auth, body: { name: 'Protocol' } })).body.data.id;
      ids.task = (await t.request('POST', '/api/authorization/users/export', auth)).body.data.id;
    });
    after(async () => t.close());

    /** A client through one link; `requests` counts its HTTP requests. */
    function client(link: LinkFactory, headers: Record<string, string> = {}) {
      const sent = { requests: 0 };
      const counted: typeof fetch = (input, init) => {
        sent.requests++;
        return fetch(input, init);
      };
      const api = createTRPCClient<AppRouter>({
        links: [
          link({
            url: `${base}/trpc`,
            headers: () => ({ authorization: `Bearer ${token}`, ...headers }),
            fetch: counted,
          }),
        ],
      });
      return { api, sent };
    }

    for (const [name, link] of Object.entries(LINKS)) {
      test(`${name}: queries without and with input, a mutation, errors in the router's shape`, async () => {
        const { api } = client(link);
        const me = await api.auth.me.query();
        assert.equal(me.username, 'admin');
        const page = await api.users.list.query({ page_size: 1 });
        assert.equal(page.page_size, 1);
        assert.equal(page.data.length, 1);
        const role = await api.roles.create.mutate({
          name: `via-${name}`,
          description: '',
          permissions: ['user:list'],
        });
        assert.equal((await api.roles.get.query({ id: role.id })).name, `via-${name}`);

        const error = await api.users.get.query({ id: 'not-a-uuid' }).then(
          () => assert.fail('answered'),
          (e: unknown) => e,
        );
        assert.ok(error instanceof TRPCClientError);
        assert.equal(error.data?.code, 'BAD_REQUEST');
        assert.equal(error.data?.httpStatus, 400);
        assert.equal((error.shape as { appCode: string }).appCode, 'E4001');
        assert.match(error.message, /^id: /);
        const missing = await api.users.get.query({ id: '00000000-0000-4000-8000-000000000000' }).then(
          () => assert.fail('answered'),
          (e: unknown) => e,
        );
        assert.equal((missing as TRPCClientError<AppRouter>).data?.httpStatus, 404);
      });

      test(`${name}: Accept-Language and X-Scope-OrgID reach the procedure`, async () => {
        const chinese = client(link, { 'accept-language': 'zh-CN' }).api;
        const error = await chinese.users.get.query({ id: 'x' }).then(
          () => assert.fail('answered'),
          (e: unknown) => e as TRPCClientError<AppRouter>,
        );
        const english = await client(link)
          .api.users.get.query({ id: 'x' })
          .then(
            () => assert.fail('answered'),
            (e: unknown) => e as TRPCClientError<AppRouter>,
          );
        assert.notEqual(error.message, english.message);
        const scoped = client(link, { 'x-scope-orgid': ids.org! }).api;
        assert.ok((await scoped.roles.list.query({})).data.every((r) => r.org_id === null || r.org_id === ids.org));
        const wrongOrg = await client(link, { 'x-scope-orgid': 'nope' })
          .api.auth.me.query()
          .then(
            () => assert.fail('answered'),
            (e: unknown) => e as TRPCClientError<AppRouter>,
          );
        assert.equal((wrongOrg.shape as { appCode: string }).appCode, 'E4001');
        assert.match(wrongOrg.message, /X-Scope-OrgID/);
      });
    }

    test('httpBatchLink: calls made together travel in one request, each with its own answer or error', async () => {
      const { api, sent } = client(httpBatchLink);
      const [me, users, failed] = await Promise.allSettled([
        api.auth.me.query(),
        api.users.list.query({ page_size: 2 }),
        api.users.get.query({ id: 'bad' }),
      ]);
      assert.equal(sent.requests, 1);
      assert.equal(me.status === 'fulfilled' && me.value.username, 'admin');
      assert.equal(users.status === 'fulfilled' && users.value.page_size, 2);
      assert.equal(failed.status === 'rejected' && (failed.reason as TRPCClientError<AppRouter>).data?.httpStatus, 400);
    });

    test('wire details as tRPC sends them: 207 for a mixed batch; a wrong method or an unknown path is E4041', async () => {
      const headers = { authorization: `Bearer ${token}` };
      const mixed = await fetch(
        `${base}/trpc/auth.me,users.get?batch=1&input=${encodeURIComponent(JSON.stringify({ 1: { id: 'x' } }))}`,
        { headers },
      );
      assert.equal(mixed.status, 207);
      assert.match(mixed.headers.get('content-type')!, /^application\/json/);
      const [ok, bad] = (await mixed.json()) as [
        { result: { data: { username: string } } },
        { error: { data: { httpStatus: number } } },
      ];
      assert.equal(ok.result.data.username, 'admin');
      assert.equal(bad.error.data.httpStatus, 400);
      // Requests the fast path leaves to tRPC's handler still answer in the router's error shape.
      for (const path of ['users.create', 'users.nothing']) {
        const res = await fetch(`${base}/trpc/${path}`, { headers });
        assert.equal(res.status, 404, path);
        assert.equal(((await res.json()) as { error: { appCode: string } }).error.appCode, 'E4041', path);
      }
    });

    test('HTTP metrics name each procedure; batches and unknown names share one label', async () => {
      const headers = { authorization: `Bearer ${token}` };
      await fetch(`${base}/trpc/auth.me`, { headers });
      await fetch(`${base}/trpc/auth.me,permissions.list?batch=1`, { headers });
      await fetch(`${base}/trpc/no.such${Math.random()}`, { headers });
      const scraped = await (await fetch(`${base}/metrics`)).text();
      assert.match(scraped, /http_requests_total\{method="GET",route="\/trpc\/auth\.me",status="200"\} [1-9]/);
      assert.match(scraped, /http_requests_total\{method="GET",route="\/trpc\/:path",status="200"\} [1-9]/);
      assert.match(scraped, /http_requests_total\{method="GET",route="\/trpc\/:path",status="404"\} [1-9]/);
      assert.doesNotMatch(scraped, /route="\/trpc\/no\.such/);
    });

    test('every procedure answers alike through /api, /trpc and tRPC’s own caller', async () => {
      const samples: Record<string, unknown> = {
        'users.list': { page_size: 5 },
        'users.get': { id: ids.user },
        'roles.list': {},
        'roles.get': { id: ids.role },
        'organizations.list': {},
        'organizations.get': { id: ids.org },
        'organizations.mine': {},
        'audit.list': { page_size: 5 },
        'audit.checkpoints': { page_size: 5 },
        'tasks.list': {},
        'tasks.get': { id: ids.task },
        'tasks.logs': { id: ids.task },
        'schedules.list': {},
      };
      const ctx: Context = {
        services: t.c.services,
        req: { ip: '127.0.0.1', userAgent: 'test', locale: 'en', authorization: `Bearer ${token}` },
      };
      const caller = appRouter.createCaller(ctx) as unknown as Record<
        string,
        Record<string, (input: unknown) => Promise<unknown>>
      >;
      const viaCaller = (path: string, input: unknown) => {
        const [group, name] = path.split('.') as [string, string];
        return caller[group]![name]!(input).then(
          (data) => ({ data }),
          (error: unknown) => ({ failure: failureOf(error) }),
        );
      };
      const viaTrpc = async (path: string, type: string, input: unknown) => {
        const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
        const res =
          type === 'query'
            ? await fetch(
                `${base}/trpc/${path}${input === undefined ? '' : `?input=${encodeURIComponent(JSON.stringify(input))}`}`,
                { headers },
              )
            : await fetch(`${base}/trpc/${path}`, { method: 'POST', headers, body: JSON.stringify(input) });
        const body = (await res.json()) as { result?: { data: unknown }; error?: { appCode: string; message: string } };
        return body.result
          ? { data: body.result.data }
          : { failure: { status: res.status, code: body.error!.appCode, message: body.error!.message } };
      };
      const viaRest = async (procedure: AnyTRPCProcedure, input: unknown) => {
        const meta = procedure._def.meta as Meta;
        const values = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
        const used = new Set<string>();
        const url = meta.openapi!.path.replace(/\{(\w+)\}/g, (_m, key: string) => {
          used.add(key);
          return encodeURIComponent(String(values[key] ?? 'x'));
        });
        const rest = Object.fromEntries(
          Object.entries(values)
            .filter(([k]) => !used.has(k))
            .map(([k, v]) => [k, String(v)]),
        );
        const reads = meta.openapi!.method === 'GET' || meta.openapi!.method === 'DELETE';
        const res = await t.request(
          meta.openapi!.method,
          `/api${url}${reads && Object.keys(rest).length ? `?${new URLSearchParams(rest)}` : ''}`,
          reads ? { token } : { token, raw: JSON.stringify(input) },
        );
        if (res.body.code !== '0')
          return { failure: { status: res.status, code: res.body.code as string, message: res.body.err as string } };
        const { code: _code, ...answer } = res.body as Record<string, unknown>;
        return { data: meta.list ? answer : answer.data };
      };

      const procedures = appRouter._def.procedures as unknown as Record<string, AnyTRPCProcedure>;
      let compared = 0;
      for (const [path, procedure] of Object.entries(procedures)) {
        const type = procedure._def.type;
        // A subscription answers a stream, not one value: test/task-events.test.ts drives it with tRPC's client.
        if (type === 'subscription') continue;
        // A query is compared on a real answer; a mutation on its refusal of a wrong input (running it three
        // times would change what the next call sees).
        const input = type === 'query' ? samples[path] : 'not an object';
        const expected = await viaCaller(path, input);
        assert.deepEqual(await viaTrpc(path, type, input), expected, `/trpc/${path}`);
        if (type === 'mutation')
          assert.equal(
            (expected as { failure?: { code: string } }).failure?.code,
            'E4001',
            `${path} refuses a string input`,
          );
        if (NO_REST[path]) continue;
        assert.ok(
          (procedure._def.meta as Meta | undefined)?.openapi,
          `${path} has a REST route or a reason in NO_REST`,
        );
        const rest = await viaRest(procedure, input);
        // A REST body that is not an object is refused before the procedure, in words of its own.
        if (type === 'mutation')
          assert.deepEqual(
            [
              (rest as { failure?: { status: number; code: string } }).failure?.status,
              (rest as { failure?: { code: string } }).failure?.code,
            ],
            [400, 'E4001'],
            `/api ${path}`,
          );
        else assert.deepEqual(rest, expected, `/api ${path}`);
        compared++;
      }
      assert.ok(compared >= 40, `${compared} procedures compared`);
    });
  });
}
