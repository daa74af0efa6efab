import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { until } from './support/engine-node.ts';
import { captureLogs, lanes, startConsole, type TestConsole } from './support/harness.ts';

const accessLines = (lines: Record<string, unknown>[]) => lines.filter((l) => l.msg === 'request');

for (const lane of lanes()) {
  describe(`access log [${lane.name}]`, () => {
    let t: TestConsole;
    let logs: ReturnType<typeof captureLogs>;
    before(async () => {
      logs = captureLogs('info');
      t = await startConsole(lane, { log: { level: 'info' } }, { logger: logs.logger });
    });
    after(() => t.close());

    test('one info line per request: method, route pattern, status, duration, bytes, trace id, user id', async () => {
      const token = await t.login();
      const me = (await t.request('GET', '/api/auth/me', { token })).body.data;
      logs.lines.length = 0;
      const traceId = '0af7651916cd43dd8448eb211c80319c';
      const res = await t.request('GET', `/api/users/${me.id}?secret_looking=1`, {
        token,
        headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` },
      });
      assert.equal(res.status, 200);
      const [line, ...more] = accessLines(logs.lines);
      assert.equal(more.length, 0, 'one line per request');
      assert.equal(line!.level, 30, 'info');
      assert.equal(line!.method, 'GET');
      assert.equal(line!.route, '/api/users/:id', 'the matched pattern, not the URL');
      assert.equal(line!.status, 200);
      assert.equal(typeof line!.ms, 'number');
      assert.equal(line!.bytes, Buffer.byteLength(res.text));
      assert.equal(line!.trace_id, traceId);
      assert.equal(line!.user_id, me.id);
      assert.ok(!JSON.stringify(line).includes('secret_looking'), 'no query string');

      logs.lines.length = 0;
      await t.request('GET', '/api/nowhere/at/all?code=abc');
      const unmatched = accessLines(logs.lines)[0]!;
      assert.equal(unmatched.status, 404);
      assert.equal(unmatched.route, 'unmatched');
      assert.equal(unmatched.user_id, undefined);
    });

    test('no token, cookie or signed URL signature in any line; health probes are not logged', async () => {
      const token = await t.login();
      logs.lines.length = 0;
      const started = await t.request('POST', '/api/authorization/users/export', {
        token,
        headers: { cookie: 'session=cookie-secret-value' },
      });
      const id = started.body.data.id as string;
      let task: { status: string; artifact_file_key: string } | undefined;
      assert.ok(
        await until(
          async () => (task = (await t.request('GET', `/api/tasks/${id}`, { token })).body.data).status === 'success',
          10_000,
        ),
      );
      const signed = await t.request('GET', `/api/files/${task!.artifact_file_key}?method=sign`, { token });
      const url = new URL(signed.body.data.url as string, 'http://x');
      const signature = url.searchParams.get('signature')!;
      assert.ok(signature.length > 8);
      assert.equal((await t.request('GET', `${url.pathname}${url.search}`)).status, 200);
      await t.request('GET', '/healthz');
      await t.request('GET', '/readyz');

      const lines = accessLines(logs.lines);
      const download = lines.find((l) => l.route === '/api/files/:fileKey' && l.user_id === undefined);
      assert.ok(download, 'the signed download is logged');
      assert.equal(download.status, 200);
      const text = JSON.stringify(logs.lines);
      for (const secret of [token, signature, 'cookie-secret-value', 'Bearer'])
        assert.ok(!text.includes(secret), `${secret.slice(0, 12)}… is not logged`);
      assert.ok(!lines.some((l) => l.route === '/healthz' || l.route === '/readyz'), 'probes are not logged');
    });
  });
}

describe('access log switches', () => {
  const lane = lanes()[0]!;

  test('log.access: false logs no request; log.access_probes: true logs the probes', async () => {
    const quiet = captureLogs('info');
    const off = await startConsole(lane, { log: { level: 'info', access: false } }, { logger: quiet.logger });
    try {
      await off.request('GET', '/api/auth/oauth/providers');
      assert.equal(accessLines(quiet.lines).length, 0);
    } finally {
      await off.close();
    }
    const loud = captureLogs('info');
    const probes = await startConsole(lane, { log: { level: 'info', access_probes: true } }, { logger: loud.logger });
    try {
      await probes.request('GET', '/healthz');
      assert.deepEqual(
        accessLines(loud.lines).map((l) => l.route),
        ['/healthz'],
      );
    } finally {
      await probes.close();
    }
  });
});
