import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { MAX_WAITING, PermanentExportError, RetryingExporter, type RetryPolicy } from '../server/tracing/retry.ts';
import { until } from './support/engine-node.ts';
import { captureLogs, lanes, startConsole, type TestConsole } from './support/harness.ts';
import { startReceiver, type ReceivedSpan, type Receiver } from './support/otel-receiver.ts';
import { createTestPki, SERVER_NAME, type TestPki } from './support/tls-certs.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const traceparent = `00-${TRACE}-00f067aa0ba902b7-01`;

/** Logs in, lists users under the caller's traceparent, asks for a missing user; answers the admin's id and the 404. */
async function traffic(t: TestConsole) {
  const token = await t.login();
  const list = await t.request('GET', '/api/users', { token, headers: { traceparent } });
  assert.equal(list.status, 200);
  const me = await t.request('GET', '/api/auth/me', { token });
  const missing = await t.request('GET', '/api/users/00000000-0000-7000-8000-000000000000', {
    token,
    headers: { traceparent },
  });
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
        tracing: {
          service_name: 'console-under-test',
          http: { endpoint: receiver.http, insecure: true, compression: 'gzip', header: { 'x-tenant': 'acme' } },
        },
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
      assert.ok(
        await receiver.waitFor((s) => s.name === 'GET /api/auth/me' && s.traceId !== TRACE),
        'a request without traceparent starts a trace of its own',
      );
      assert.ok(adminId);
      assert.equal(server.attrs['enduser.id'], adminId);
      assert.ok(
        receiver.spans.some((s) => s.traceId === TRACE && s.name.startsWith('db ') && s.parentId),
        'a query span is a child in the request’s trace',
      );
      const run = await receiver.waitFor((s) => s.name === 'task traced' && s.attrs['task.id'] === taskId);
      assert.equal(run.attrs['task.outcome'], 'success');
      assert.match(taskLog, new RegExp(`trace_id=${run.traceId}`), 'task log lines carry the run’s trace id');
      const exported = receiver.headers.filter((h) => h['x-tenant'] === 'acme');
      assert.ok(exported.length > 0, 'configured headers are sent');
      assert.ok(
        exported.every((h) => h['content-encoding'] === 'gzip'),
        'exports are gzip-compressed',
      );
    });

    test('without an exporter, envelopes and request log lines still carry a trace id', async () => {
      const logs = captureLogs('warn');
      // Every query is "slow", so each request logs from inside its database calls.
      const t = await startConsole(
        lane,
        { database: { ...lane.database(), slow_threshold: '0s' } },
        { logger: logs.logger },
      );
      // The request's own queries: the engine and the change feed query on their own meanwhile, outside any request.
      const ofUsers = (l: Record<string, unknown>) => l.msg === 'slow query' && /users/.test(String(l.sql));
      try {
        const token = await t.login();
        const before = logs.lines.length;
        const missing = await t.request('GET', '/api/users/00000000-0000-7000-8000-000000000000', {
          token,
          headers: { traceparent },
        });
        assert.equal(missing.body.trace_id, TRACE);
        const lines = logs.lines.slice(before).filter(ofUsers);
        assert.ok(lines.length > 0, 'the request logged');
        assert.ok(
          lines.every((l) => l.trace_id === TRACE),
          `every line of the request carries its trace id: ${JSON.stringify(lines.map((l) => l.trace_id))}`,
        );
        // A body is read on stream events outside the context onRequest entered: the handler must get it back.
        const posted = logs.lines.length;
        await t.request('POST', '/api/auth/login', {
          body: { username: 'admin', password: 'wrong-password' },
          headers: { traceparent },
        });
        const postLines = logs.lines.slice(posted).filter(ofUsers);
        assert.ok(
          postLines.length > 0 && postLines.every((l) => l.trace_id === TRACE),
          'a request with a body keeps its trace id',
        );
        const fresh = await t.request('GET', '/api/users/00000000-0000-7000-8000-000000000000', { token });
        assert.match(String(fresh.body.trace_id), /^[0-9a-f]{32}$/);
        assert.notEqual(fresh.body.trace_id, TRACE);
        const trpc = await t.request(
          'GET',
          `/trpc/users.get?input=${encodeURIComponent(JSON.stringify({ id: '00000000-0000-7000-8000-000000000000' }))}`,
          { token, headers: { traceparent } },
        );
        assert.equal(trpc.body.error?.trace_id, TRACE, '/trpc errors carry it too');
      } finally {
        await t.close();
      }
    });

    test('without an exporter, task log lines carry a trace id of their run', async () => {
      const t = await startConsole(lane);
      try {
        t.c.engine.register('untraced', async (ctx) => ctx.log.info('hello'));
        const token = await t.login();
        const traceIds: string[] = [];
        for (let i = 0; i < 2; i++) {
          const id = (await t.c.engine.create({ type: 'untraced', creatorId: null }))!.id;
          let lines: { message: string }[] = [];
          assert.ok(
            await until(
              async () =>
                (lines = (await t.request('GET', `/api/tasks/${id}/logs`, { token })).body.data ?? []).length > 0,
              5000,
            ),
            'the task logged',
          );
          const match = /trace_id=([0-9a-f]{32})/.exec(lines[0]!.message);
          assert.ok(match, `the log line names its trace: ${lines[0]!.message}`);
          traceIds.push(match[1]!);
        }
        assert.notEqual(traceIds[0], traceIds[1], 'each run is a trace of its own');
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
    await exportWith(
      { http: { endpoint: receiver.http, insecure: true, header: { 'x-tenant': 'json-acme' } } },
      { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' },
    );
    const span = await receiver.waitFor((s) => s.via === 'otlp-http-json' && named('GET /api/users')(s));
    assert.equal(span.service, 'console-exporters');
    assert.ok(
      receiver.headers.some((h) => h['x-tenant'] === 'json-acme' && h['content-encoding'] === undefined),
      'uncompressed by default',
    );
  });

  test('OTLP/gRPC sends metadata and the route-named span', async () => {
    await exportWith({
      grpc: { endpoint: receiver.grpc, insecure: true, compression: true, header: { 'x-tenant': 'grpc-acme' } },
    });
    const span = await receiver.waitFor((s) => s.via === 'otlp-grpc' && named('GET /api/users')(s));
    assert.equal(span.service, 'console-exporters');
    assert.ok(receiver.headers.some((h) => h['x-tenant'] === 'grpc-acme'));
  });

  test('Zipkin v2 JSON: spans are flushed on shutdown', async () => {
    await exportWith({ zipkin: { endpoint: `http://${receiver.http}/api/v2/spans` } });
    const span = await receiver.waitFor(
      (s) => s.via === 'zipkin' && s.name.toLowerCase() === 'get /api/users' && s.traceId === TRACE,
    );
    assert.equal(span.service, 'console-exporters');
  });

  test('the file exporter writes one JSON object per span per line', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'console-spans-')), 'spans.jsonl');
    await exportWith({ file: { path } });
    const spans = readFileSync(path, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const server = spans.find((s) => s.name === 'GET /api/users' && s.trace_id === TRACE);
    assert.ok(server, 'the request span is in the file');
    assert.equal(server.service_name, 'console-exporters');
    assert.ok(
      spans.some((s) => s.trace_id === TRACE && s.parent_span_id === server.span_id),
      'its children are linked to it',
    );
  });

  test('every gRPC key is applied: no warning at start; a service config grpc-js refuses stops the start', async () => {
    const logs = captureLogs('warn');
    const t = await startConsole(
      lane,
      {
        tracing: { grpc: { endpoint: receiver.grpc, insecure: true, service_config: '{}', reconnection_period: '5s' } },
      },
      { logger: logs.logger },
    );
    await t.close();
    const messages = logs.lines.map((l) => String(l.msg));
    assert.ok(!messages.some((m) => /tracing|not applied|not available/.test(m)), messages.join('; '));
    const badPolicy = JSON.stringify({ methodConfig: [{ name: [{}], retryPolicy: { maxAttempts: 1 } }] });
    await assert.rejects(
      startConsole(lane, { tracing: { grpc: { endpoint: receiver.grpc, insecure: true, service_config: badPolicy } } }),
      /tracing\.grpc\.service_config.*maxAttempts/,
    );
  });

  test('a receiver that is down neither slows requests nor crashes the service', async () => {
    const down = await startReceiver();
    await down.close();
    const logs = captureLogs('warn');
    const t = await startConsole(
      lane,
      { tracing: { http: { endpoint: down.http, insecure: true, timeout: '1s' } } },
      { logger: logs.logger },
    );
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
      assert.ok(
        logs.lines.filter((l) => String(l.msg).startsWith('trace export failed')).length === 1,
        'the failure is reported, once',
      );
    }
  });
});

describe('tracing retry', () => {
  const noSpans = [] as ReadableSpan[];
  const policy = (p: Partial<RetryPolicy>): RetryPolicy => ({
    enabled: true,
    initial_interval: 20,
    max_interval: 40,
    max_elapsed_time: 5000,
    ...p,
  });

  /** An exporter that fails the first `failures` exports (with `error`), noting when each export came. */
  function flaky(failures: number, error: () => Error = () => new Error('receiver down')) {
    const calls: number[] = [];
    const exporter: SpanExporter = {
      export(_spans, done) {
        calls.push(performance.now());
        done(
          calls.length > failures
            ? { code: ExportResultCode.SUCCESS }
            : { code: ExportResultCode.FAILED, error: error() },
        );
      },
      shutdown: async () => {},
    };
    return { exporter, calls };
  }
  const exportOnce = (e: SpanExporter) => new Promise<ExportResult>((resolve) => e.export(noSpans, resolve));

  test('a failed batch is sent again with growing intervals until it goes through; enabled: false sends it once', async () => {
    const { exporter, calls } = flaky(2);
    const reports: Error[] = [];
    const retrying = new RetryingExporter(exporter, policy({}), (e) => reports.push(e));
    assert.equal(
      (await exportOnce(retrying)).code,
      ExportResultCode.SUCCESS,
      'a batch taken for retry does not hold up the batch processor',
    );
    assert.ok(await until(() => calls.length === 3, 2000), `three attempts, got ${calls.length}`);
    const [first, second, third] = calls as [number, number, number];
    assert.ok(second - first >= 19, `the first retry waits initial_interval (${Math.round(second - first)} ms)`);
    assert.ok(third - second >= 29, `the next waits 1.5 times longer (${Math.round(third - second)} ms)`);
    assert.equal(reports.length, 2, 'each failure is reported');
    await retrying.shutdown();
    assert.equal(calls.length, 3, 'a delivered batch is not sent again');

    const once = flaky(2);
    const single = new RetryingExporter(once.exporter, policy({ enabled: false }), () => {});
    assert.equal((await exportOnce(single)).code, ExportResultCode.FAILED);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(once.calls.length, 1, 'retry disabled: one attempt');
  });

  test('retries stop at max_elapsed_time; a permanent refusal is not retried', async () => {
    const { exporter, calls } = flaky(Infinity);
    const reports: Error[] = [];
    const retrying = new RetryingExporter(
      exporter,
      policy({ initial_interval: 10, max_interval: 10, max_elapsed_time: 100 }),
      (e) => reports.push(e),
    );
    await exportOnce(retrying);
    assert.ok(await until(() => reports.some((e) => e.message.includes('dropped')), 2000), 'the drop is reported');
    const attempts = calls.length;
    assert.ok(attempts >= 3 && attempts <= 11, `attempts within 100 ms at 10 ms intervals: ${attempts}`);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(calls.length, attempts, 'no attempt after the batch is dropped');

    const permanent = flaky(Infinity, () => new PermanentExportError('400 Bad Request'));
    const refused = new RetryingExporter(permanent.exporter, policy({}), () => {});
    assert.equal((await exportOnce(refused)).code, ExportResultCode.FAILED);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(permanent.calls.length, 1);
  });

  test('at most MAX_WAITING batches wait for a retry; shutdown gives each one last attempt without waiting out the backoff', async () => {
    const { exporter, calls } = flaky(Infinity);
    const retrying = new RetryingExporter(
      exporter,
      policy({ initial_interval: 60_000, max_interval: 60_000, max_elapsed_time: 0 }),
      () => {},
    );
    const results = await Promise.all(Array.from({ length: MAX_WAITING + 3 }, () => exportOnce(retrying)));
    assert.equal(results.filter((r) => r.code === ExportResultCode.SUCCESS).length, MAX_WAITING, 'taken for retry');
    assert.equal(results.filter((r) => r.code === ExportResultCode.FAILED).length, 3, 'dropped at once');
    const t0 = performance.now();
    await retrying.shutdown();
    assert.ok(performance.now() - t0 < 1000, 'shutdown does not wait for the next interval');
    assert.equal(calls.length, MAX_WAITING + 3 + MAX_WAITING, 'one last attempt per waiting batch');
  });
});

describe('tracing delivery', () => {
  const lane = lanes()[0]!;
  const serviceSpans = (r: Receiver, service: string) =>
    r.spans.filter((s) => s.service === service && s.name === 'GET /api/users');

  /** Starts a console with `tracing`, runs the traffic; answers the console for the test to close. */
  async function tracedConsole(
    service: string,
    block: Record<string, unknown>,
    logger?: ReturnType<typeof captureLogs>,
  ) {
    const t = await startConsole(
      lane,
      { tracing: { service_name: service, ...block } },
      logger ? { logger: logger.logger } : {},
    );
    try {
      const token = await t.login();
      assert.equal(
        (await t.request('GET', '/api/users', { token, headers: { traceparent } })).status,
        200,
        'the service answers whatever the receiver does',
      );
    } catch (error) {
      await t.close();
      throw error;
    }
    return t;
  }

  test('OTLP/HTTP: a batch the receiver refuses twice arrives on the third attempt; retry disabled sends once', async () => {
    const receiver = await startReceiver({ refuse: 2 });
    try {
      const t = await tracedConsole('retry-on', {
        http: {
          endpoint: receiver.http,
          insecure: true,
          retry: { initial_interval: '100ms', max_interval: '200ms', max_elapsed_time: '10s' },
        },
      });
      try {
        await receiver.waitFor((s) => s.service === 'retry-on' && named('GET /api/users')(s), 5000);
      } finally {
        await t.close();
      }
      const before = receiver.attempts;
      const off = await tracedConsole('retry-off', {
        http: { endpoint: receiver.http, insecure: true, retry: '{"enabled":false}' },
      });
      await off.close();
      assert.ok(receiver.attempts > before, 'the batch was sent');
      assert.equal(serviceSpans(receiver, 'retry-off').length, 0, 'each batch was sent once, and refused');
    } finally {
      await receiver.close();
    }
  });

  test('OTLP/gRPC: a service_config retry policy retries in the channel; without it the batch is sent once', async () => {
    const receiver = await startReceiver({ refuse: 2 });
    const serviceConfig = JSON.stringify({
      methodConfig: [
        {
          name: [{ service: 'opentelemetry.proto.collector.trace.v1.TraceService' }],
          retryPolicy: {
            maxAttempts: 4,
            initialBackoff: '0.05s',
            maxBackoff: '0.1s',
            backoffMultiplier: 2,
            retryableStatusCodes: ['UNAVAILABLE'],
          },
        },
      ],
    });
    try {
      const grpc = { endpoint: receiver.grpc, insecure: true, retry: { enabled: false } };
      await (await tracedConsole('channel-retry', { grpc: { ...grpc, service_config: serviceConfig } })).close();
      assert.equal(serviceSpans(receiver, 'channel-retry').length, 1, 'the policy retried the refused export');
      await (await tracedConsole('no-channel-retry', { grpc })).close();
      assert.equal(serviceSpans(receiver, 'no-channel-retry').length, 0);
    } finally {
      await receiver.close();
    }
  });

  test('OTLP/gRPC: reconnection_period is the time between connection attempts', async () => {
    const gone = await startReceiver();
    await gone.close();
    const logs = captureLogs('warn');
    const retry = { initial_interval: '100ms', max_interval: '100ms', max_elapsed_time: '20s' };
    const t = await tracedConsole(
      'reconnecting',
      { grpc: { endpoint: gone.grpc, insecure: true, reconnection_period: '3s', retry } },
      logs,
    );
    let receiver: Receiver | undefined;
    try {
      assert.ok(
        await until(() => logs.lines.some((l) => String(l.msg).startsWith('trace export failed')), 5000),
        'the first export failed',
      );
      const failedAt = performance.now();
      receiver = await startReceiver({ grpcPort: Number(gone.grpc.split(':')[1]) });
      // grpc-js alone would reconnect after about 1 s; with the period set, not before about 2.4 s (3 s, less jitter).
      await new Promise((r) => setTimeout(r, 1800));
      assert.equal(serviceSpans(receiver, 'reconnecting').length, 0, 'no connection attempt before the period is up');
      await receiver.waitFor((s) => s.service === 'reconnecting', 5000);
      assert.ok(performance.now() - failedAt < 5000);
    } finally {
      await t.close();
      await receiver?.close();
    }
  });
});

describe('tracing over TLS', () => {
  const lane = lanes()[0]!;
  let pki: TestPki;
  before(() => (pki = createTestPki()));

  /** Traffic on a console exporting over `kind` with `tls_config`, closed (flushed); answers whether its spans arrived. */
  async function arrives(receiver: Receiver, kind: 'http' | 'grpc', service: string, tls: Record<string, unknown>) {
    const logs = captureLogs('warn');
    const t = await startConsole(
      lane,
      { tracing: { service_name: service, [kind]: { endpoint: receiver[kind], tls_config: tls } } },
      { logger: logs.logger },
    );
    try {
      const token = await t.login();
      for (let i = 0; i < 3; i++)
        assert.equal((await t.request('GET', '/api/users', { token })).status, 200, 'the service answers');
    } finally {
      await t.close();
    }
    const arrived = receiver.spans.some((s) => s.service === service && s.name === 'GET /api/users');
    if (!arrived)
      assert.ok(
        logs.lines.some((l) => String(l.msg).startsWith('trace export failed')),
        'a failed export is reported',
      );
    return arrived;
  }

  for (const kind of ['http', 'grpc'] as const) {
    test(`${kind}: ca_file verifies the receiver; without it the spans do not go, unless insecure_skip_verify`, async () => {
      const receiver = await startReceiver({ tls: { key: pki.server.key, cert: pki.server.cert } });
      try {
        assert.ok(
          await arrives(receiver, kind, `${kind}-ca`, { ca_file: pki.caFile, server_name: SERVER_NAME }),
          'verified with ca_file',
        );
        assert.ok(
          !(await arrives(receiver, kind, `${kind}-unknown-ca`, { server_name: SERVER_NAME })),
          'an unknown CA is refused',
        );
        assert.ok(
          !(await arrives(receiver, kind, `${kind}-wrong-name`, { ca_file: pki.caFile })),
          'the certificate must name the server',
        );
        assert.ok(
          await arrives(receiver, kind, `${kind}-skip`, { insecure_skip_verify: true }),
          'insecure_skip_verify accepts any certificate',
        );
      } finally {
        await receiver.close();
      }
    });

    test(`${kind}: cert_file and key_file are presented to a receiver that requires a client certificate`, async () => {
      const receiver = await startReceiver({ tls: { key: pki.server.key, cert: pki.server.cert, ca: pki.ca } });
      try {
        const verified = { ca_file: pki.caFile, server_name: SERVER_NAME };
        assert.ok(
          await arrives(receiver, kind, `${kind}-mtls`, {
            ...verified,
            cert_file: pki.client.certFile,
            key_file: pki.client.keyFile,
          }),
        );
        assert.ok(
          !(await arrives(receiver, kind, `${kind}-no-client-cert`, verified)),
          'refused without a client certificate',
        );
      } finally {
        await receiver.close();
      }
    });
  }
});
