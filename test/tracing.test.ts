import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { until } from './support/engine-node.ts';
import { captureLogs, lanes, startConsole, type TestConsole } from './support/harness.ts';
import { startReceiver, type ReceivedSpan, type Receiver } from './support/otel-receiver.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const traceparent = `00-${TRACE}-00f067aa0ba902b7-01`;

/** Logs in, lists users under the caller's traceparent, asks for a missing user; answers the admin's id and the 404. */
async function traffic(t: TestConsole) {
  const token = await t.login();
  const list = await t.request('GET', '/api/users', { token, headers: { traceparent } });
  assert.equal(list.status, 200);
  const me = await t.request('GET', '/api/auth/me', { token });
  const missing = await t.request('GET', '/api/users/00000000-0000-7000-8000-000000000000', { token, headers: { traceparent } });
  return { adminId: (me.body.data?.id ?? me.body.data?.user?.id) as string | undefined, missing };
}

const named = (name: string) => (s: ReceivedSpan) => s.name === name && s.traceId === TRACE;

for (const lane of lanes()) {
  describe(`tracing [${lane.name}]`, () => {
    let receiver: Receiver;
    before(async () => (receiver = await startReceiver()));
    after(() => receiver.close());

    test('OTLP/HTTP protobuf: request, query and task spans arrive gzip-compressed with the configured headers', async () => {
      const t = await startConsole(lane, {
        tracing: { service_name: 'console-under-test', http: { endpoint: receiver.http, insecure: true, compression: 'gzip', header: { 'x-tenant': 'acme' } } },
      });
      let taskId = '';
      let adminId: string | undefined;
      let taskLog = '';
      try {
        const answers = await traffic(t);
        adminId = answers.adminId;
        const { missing } = answers;
        assert.equal(missing.status, 404);
        assert.equal(missing.body.trace_id, TRACE, 'the error envelope names the caller’s trace');
        t.c.engine.register('traced', async (ctx) => ctx.log.info('hello'));
        taskId = (await t.c.engine.create({ type: 'traced', creatorId: null }))!.id;
        assert.ok(await until(async () => (await t.c.engine.get(taskId))?.status === 'success', 5000));
        assert.ok(await until(async () => (await t.c.engine.logs(taskId, 0, 10)).total > 0, 2000));
        taskLog = (await t.c.engine.logs(taskId, 0, 10)).rows[0]!.message;
      } finally {
        await t.close();
      }
      const server = await receiver.waitFor(named('GET /api/users'));
      assert.equal(server.via, 'otlp-http-protobuf');
      assert.equal(server.service, 'console-under-test');
      assert.equal(String(server.attrs['http.response.status_code']), '200');
      assert.ok(await receiver.waitFor((s) => s.name === 'GET /api/auth/me' && s.traceId !== TRACE), 'a request without traceparent starts a trace of its own');
      assert.ok(adminId);
      assert.equal(server.attrs['enduser.id'], adminId);
      assert.ok(receiver.spans.some((s) => s.traceId === TRACE && s.name.startsWith('db ') && s.parentId), 'a query span is a child in the request’s trace');
      const run = await receiver.waitFor((s) => s.name === 'task traced' && s.attrs['task.id'] === taskId);
      assert.equal(run.attrs['task.outcome'], 'success');
      assert.match(taskLog, new RegExp(`trace_id=${run.traceId}`), 'task log lines carry the run’s trace id');
      const exported = receiver.headers.filter((h) => h['x-tenant'] === 'acme');
      assert.ok(exported.length > 0, 'configured headers are sent');
      assert.ok(exported.every((h) => h['content-encoding'] === 'gzip'), 'exports are gzip-compressed');
    });

    test('without an exporter, envelopes and request log lines still carry a trace id', async () => {
      const logs = captureLogs('warn');
      // Every query is "slow", so each request logs from inside its database calls.
      const t = await startConsole(lane, { database: { ...lane.database(), slow_threshold: '0s' } }, { logger: logs.logger });
      try {
        const token = await t.login();
        const before = logs.lines.length;
        const missing = await t.request('GET', '/api/users/00000000-0000-7000-8000-000000000000', { token, headers: { traceparent } });
        assert.equal(missing.body.trace_id, TRACE);
        const lines = logs.lines.slice(before).filter((l) => l.msg === 'slow query');
        assert.ok(lines.length > 0, 'the request logged');
        assert.ok(lines.every((l) => l.trace_id === TRACE), `every line of the request carries its trace id: ${JSON.stringify(lines.map((l) => l.trace_id))}`);
        // A body is read on stream events outside the context onRequest entered: the handler must get it back.
        const posted = logs.lines.length;
        await t.request('POST', '/api/auth/login', { body: { username: 'admin', password: 'wrong-password' }, headers: { traceparent } });
        const postLines = logs.lines.slice(posted).filter((l) => l.msg === 'slow query');
        assert.ok(postLines.length > 0 && postLines.every((l) => l.trace_id === TRACE), 'a request with a body keeps its trace id');
        const fresh = await t.request('GET', '/api/users/00000000-0000-7000-8000-000000000000', { token });
        assert.match(String(fresh.body.trace_id), /^[0-9a-f]{32}$/);
        assert.notEqual(fresh.body.trace_id, TRACE);
        const trpc = await t.request('GET', `/trpc/users.get?input=${encodeURIComponent(JSON.stringify({ id: '00000000-0000-7000-8000-000000000000' }))}`, { token, headers: { traceparent } });
        assert.equal(trpc.body.error?.trace_id, TRACE, '/trpc errors carry it too');
      } finally {
        await t.close();
      }
    });
  });
}

describe('tracing exporters', () => {
  const lane = lanes()[0]!;
  let receiver: Receiver;
  before(async () => (receiver = await startReceiver()));
  after(() => receiver.close());

  /** Runs the traffic on a console with `tracing`, closes it (which flushes), and answers the request span. */
  async function exportWith(tracing: Record<string, unknown>, env: Record<string, string> = {}) {
    const t = await startConsole(lane, { tracing: { service_name: 'console-exporters', ...tracing } }, { env });
    try {
      await traffic(t);
    } finally {
      await t.close();
    }
  }

  test('OTLP/HTTP sends JSON when OTEL_EXPORTER_OTLP_TRACES_PROTOCOL is http/json', async () => {
    await exportWith({ http: { endpoint: receiver.http, insecure: true, header: { 'x-tenant': 'json-acme' } } }, { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' });
    const span = await receiver.waitFor((s) => s.via === 'otlp-http-json' && named('GET /api/users')(s));
    assert.equal(span.service, 'console-exporters');
    assert.ok(receiver.headers.some((h) => h['x-tenant'] === 'json-acme' && h['content-encoding'] === undefined), 'uncompressed by default');
  });

  test('OTLP/gRPC sends metadata and the route-named span', async () => {
    await exportWith({ grpc: { endpoint: receiver.grpc, insecure: true, compression: true, header: { 'x-tenant': 'grpc-acme' } } });
    const span = await receiver.waitFor((s) => s.via === 'otlp-grpc' && named('GET /api/users')(s));
    assert.equal(span.service, 'console-exporters');
    assert.ok(receiver.headers.some((h) => h['x-tenant'] === 'grpc-acme'));
  });

  test('Zipkin v2 JSON: spans are flushed on shutdown', async () => {
    await exportWith({ zipkin: { endpoint: `http://${receiver.http}/api/v2/spans` } });
    const span = await receiver.waitFor((s) => s.via === 'zipkin' && s.name.toLowerCase() === 'get /api/users' && s.traceId === TRACE);
    assert.equal(span.service, 'console-exporters');
  });

  test('the file exporter writes one JSON object per span per line', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'console-spans-')), 'spans.jsonl');
    await exportWith({ file: { path } });
    const spans = readFileSync(path, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const server = spans.find((s) => s.name === 'GET /api/users' && s.trace_id === TRACE);
    assert.ok(server, 'the request span is in the file');
    assert.equal(server.service_name, 'console-exporters');
    assert.ok(spans.some((s) => s.trace_id === TRACE && s.parent_span_id === server.span_id), 'its children are linked to it');
  });

  test('a configured exporter is active: no "not available" warning; gRPC keys the exporter cannot apply are named', async () => {
    const logs = captureLogs('warn');
    const t = await startConsole(lane, { tracing: { grpc: { endpoint: receiver.grpc, insecure: true, service_config: '{}' } } }, { logger: logs.logger });
    await t.close();
    const messages = logs.lines.map((l) => String(l.msg));
    assert.ok(!messages.some((m) => m.includes('not available')), messages.join('; '));
    assert.ok(messages.some((m) => m.includes('service_config')), messages.join('; '));
  });

  test('a receiver that is down neither slows requests nor crashes the service', async () => {
    const down = await startReceiver();
    await down.close();
    const logs = captureLogs('warn');
    const t = await startConsole(lane, { tracing: { http: { endpoint: down.http, insecure: true, timeout: '1s' } } }, { logger: logs.logger });
    try {
      const token = await t.login();
      const t0 = performance.now();
      for (let i = 0; i < 20; i++) assert.equal((await t.request('GET', '/api/users', { token })).status, 200);
      const ms = performance.now() - t0;
      assert.ok(ms < 5000, `20 requests took ${Math.round(ms)} ms`);
    } finally {
      const t0 = performance.now();
      await t.close();
      assert.ok(performance.now() - t0 < 15_000, 'shutdown waits at most about the export timeout');
      assert.ok(logs.lines.filter((l) => String(l.msg).startsWith('trace export failed')).length === 1, 'the failure is reported, once');
    }
  });
});
