// Console behind nginx (examples/nginx.conf) with TLS and the path prefix /console: every kind of answer, the
// links Console makes, and the client address with and without server.trust_proxy.
import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../server/config/load.ts';
import { until } from './support/engine-node.ts';
import { lanes, startConsole, type TestConsole } from './support/harness.ts';
import { findNginx, freePort, startNginx, type Nginx } from './support/nginx.ts';
import { createTestPki, type TestPki } from './support/tls-certs.ts';
import { ensureWebBuild } from './support/web-build.ts';

const nginxBinary = findNginx();
const skip = !nginxBinary && 'nginx not found (apt-get install nginx-light; tools/ci/services.sh installs it)';
if (skip) console.log(`# skipping the reverse proxy tests: ${skip}`);

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  text: string;
  json(): any;
}

interface CallOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** The client's own address (any of 127.0.0.0/8), as nginx sees it. */
  localAddress?: string;
}

describe('behind nginx with TLS and a path prefix', { skip }, () => {
  let pki: TestPki;
  let trusted: TestConsole;
  let untrusted: TestConsole;
  let nginx: Nginx;
  let port: number;
  let untrustedPort: number;
  let token: string;

  const open = (url: string, method: string, o: CallOptions = {}) =>
    new Promise<IncomingMessage>((resolve, reject) => {
      const headers: Record<string, string> = { ...o.headers };
      if (o.token) headers.authorization = `Bearer ${o.token}`;
      if (o.body !== undefined) headers['content-type'] = 'application/json';
      const req = httpsRequest(url, { method, headers, ca: pki.ca, localAddress: o.localAddress }, resolve);
      req.on('error', reject);
      req.end(o.body === undefined ? undefined : JSON.stringify(o.body));
    });

  const call = async (method: string, path: string, o: CallOptions & { port?: number } = {}): Promise<Answer> => {
    const url = path.startsWith('https://') ? path : `https://127.0.0.1:${o.port ?? port}${path}`;
    const res = await open(url, method, o);
    let text = '';
    for await (const chunk of res) text += chunk;
    return { status: res.statusCode!, headers: res.headers, text, json: () => JSON.parse(text) };
  };

  /** A streamed answer read as it arrives. */
  const stream = async (path: string, o: CallOptions = {}) => {
    const res = await open(`https://127.0.0.1:${port}${path}`, 'GET', o);
    let text = '';
    let aborted = false;
    res.on('aborted', () => (aborted = true));
    res.on('data', (chunk: Buffer) => (text += chunk));
    const ended = new Promise<void>((resolve) => res.on('close', resolve));
    return {
      res,
      text: () => text,
      ended,
      cleanly: () => res.complete && !aborted,
      waitFor: async (pattern: RegExp, ms: number) =>
        assert.ok(await until(async () => pattern.test(text), ms), `${pattern} within ${ms} ms; got ${text}`),
    };
  };

  const exported = async () => {
    const started = await call('POST', '/console/api/authorization/users/export', { token });
    assert.equal(started.status, 200, started.text);
    const id = started.json().data.id as string;
    let task: { status: string; artifact_file_key: string } | undefined;
    assert.ok(
      await until(
        async () =>
          (task = (await call('GET', `/console/api/tasks/${id}`, { token })).json().data).status === 'success',
        10_000,
      ),
    );
    return { id, ...task! };
  };

  before(async () => {
    pki = createTestPki();
    ensureWebBuild();
    port = await freePort();
    untrustedPort = await freePort();
    const lane = lanes()[0]!;
    const oauth = {
      enabled: true,
      providers: [
        {
          name: 'corp',
          client_id: 'console',
          client_secret: 'corp-secret',
          auth_url: 'https://idp.example/authorize',
          token_url: 'https://idp.example/token',
          user_info_url: 'https://idp.example/userinfo',
        },
      ],
    };
    trusted = await startConsole(lane, {
      server: { root_url: `https://127.0.0.1:${port}/console`, trust_proxy: true },
      oauth,
    });
    untrusted = await startConsole(lane, { server: { root_url: `https://127.0.0.1:${untrustedPort}/console` } });
    const upstreams = [await trusted.c.listen(), await untrusted.c.listen()];
    nginx = await startNginx(nginxBinary as string, [
      { port, upstream: upstreams[0]!.port, certFile: pki.local.certFile, keyFile: pki.local.keyFile },
      { port: untrustedPort, upstream: upstreams[1]!.port, certFile: pki.local.certFile, keyFile: pki.local.keyFile },
    ]);
    const login = await call('POST', '/console/api/auth/login', {
      body: { username: 'admin', password: 'admin-password-1' },
    });
    assert.equal(login.status, 200, login.text);
    token = login.json().data.token;
  });
  after(async () => {
    await nginx?.stop();
    await trusted?.close();
    await untrusted?.close();
  });

  test('the REST API answers under the prefix, errors in the envelope', async () => {
    const me = await call('GET', '/console/api/auth/me', { token });
    assert.equal(me.status, 200);
    assert.equal(me.json().data.username, 'admin');
    const missing = await call('GET', '/console/api/nowhere', { token });
    assert.equal(missing.status, 404);
    assert.equal(missing.json().code, 'E4041');
  });

  test('/trpc answers a batch of two calls', async () => {
    const batch = await call(
      'GET',
      `/console/trpc/auth.me,permissions.list?batch=1&input=${encodeURIComponent('{}')}`,
      {
        token,
      },
    );
    assert.equal(batch.status, 200, batch.text);
    const [me, permissions] = batch.json() as { result: { data: any } }[];
    assert.equal(me!.result.data.username, 'admin');
    assert.ok(Array.isArray(permissions!.result.data.items ?? permissions!.result.data));
  });

  test('the live task stream passes each event and heartbeat at once, and ends cleanly with the session', async () => {
    const session = (
      await call('POST', '/console/api/auth/login', { body: { username: 'admin', password: 'admin-password-1' } })
    ).json().data.token as string;
    const events = await stream('/console/api/tasks/events', { token: session });
    assert.equal(events.res.statusCode, 200);
    assert.match(String(events.res.headers['content-type']), /^text\/event-stream/);
    const { id } = await exported();
    await events.waitFor(new RegExp(`"id":"${id}"[^\\n]*"status":"success"`), 5000);
    // The heartbeat is sent after 15 quiet seconds: nginx must pass it on, not hold it.
    await events.waitFor(/^: ping$/m, 20_000);
    assert.equal((await call('POST', '/console/api/auth/logout', { token: session })).status, 200);
    await events.ended;
    assert.ok(events.cleanly(), 'the stream ended with its last chunk, not cut off');
  });

  test('the tRPC subscription streams through the proxy', async () => {
    const { id } = await exported();
    const sub = await stream(
      `/console/trpc/tasks.events?input=${encodeURIComponent(JSON.stringify({ task_id: id }))}`,
      {
        token,
      },
    );
    assert.equal(sub.res.statusCode, 200);
    assert.match(String(sub.res.headers['content-type']), /^text\/event-stream/);
    await sub.waitFor(new RegExp(`"id":"${id}"`), 5000);
    sub.res.destroy();
  });

  test('a signed download link carries the prefix, works without a token, and its signature is not in the log', async () => {
    const task = await exported();
    const signed = await call('GET', `/console/api/files/${task.artifact_file_key}?method=sign`, { token });
    const url = signed.json().data.url as string;
    assert.ok(url.startsWith(`https://127.0.0.1:${port}/console/api/files/`), url);
    const file = await call('GET', url);
    assert.equal(file.status, 200);
    assert.match(file.text, /^id,username,email,status,roles,created_at\r\n/);
    const signature = new URL(url).searchParams.get('signature')!;
    assert.match(nginx.accessLog(), /GET \/console\/api\/files\//);
    assert.ok(!nginx.accessLog().includes(signature), "nginx's access log leaves the query string out");
  });

  test('the OpenAPI document names the prefixed server, and /docs loads with its assets', async () => {
    const doc = (await call('GET', '/console/api/openapi.json')).json();
    assert.equal(doc.servers[0].url, `https://127.0.0.1:${port}/console/api`);
    let page = await call('GET', '/console/docs');
    let pageUrl = `https://127.0.0.1:${port}/console/docs`;
    if (page.status >= 300 && page.status < 400) {
      pageUrl = new URL(page.headers.location!, pageUrl).href;
      assert.ok(pageUrl.startsWith(`https://127.0.0.1:${port}/console/`), `redirected within the prefix: ${pageUrl}`);
      page = await call('GET', pageUrl);
    }
    assert.equal(page.status, 200);
    const assets = [...page.text.matchAll(/(?:src|href)="([^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
    assert.ok(assets.length > 0, page.text);
    for (const asset of assets) assert.equal((await call('GET', new URL(asset, pageUrl).href)).status, 200, asset);
    // The page's script asks for the document at ./json, resolved against the page's own address.
    const spec = await call('GET', new URL('json', pageUrl.endsWith('/') ? pageUrl : `${pageUrl}/`).href);
    assert.equal(spec.json().openapi, doc.openapi);
  });

  test('an OAuth login sends the provider a redirect URI under the prefix', async () => {
    const start = await call('GET', '/console/api/auth/oauth/corp/authorize');
    assert.equal(start.status, 302, start.text);
    const location = new URL(start.headers.location!);
    assert.equal(location.origin + location.pathname, 'https://idp.example/authorize');
    assert.equal(
      location.searchParams.get('redirect_uri'),
      `https://127.0.0.1:${port}/console/api/auth/oauth/corp/callback`,
    );
  });

  test('the web console is served under the prefix, its assets too', async () => {
    const root = await call('GET', '/console/');
    assert.equal(root.status, 302);
    assert.equal(root.headers.location, '/console/admin/');
    const index = await call('GET', '/console/admin/');
    assert.equal(index.status, 200);
    assert.match(index.text, /<base href="\/console\/admin\/"/);
    const script = /<script[^>]+src="([^"]+)"/.exec(index.text)![1]!;
    const asset = await call('GET', new URL(script, `https://127.0.0.1:${port}/console/admin/`).href);
    assert.equal(asset.status, 200, script);
  });

  test('the client address is the one nginx saw only with server.trust_proxy; a forged header never counts', async () => {
    const loginFrom = async (consolePort: number) => {
      const res = await call('POST', '/console/api/auth/login', {
        port: consolePort,
        localAddress: '127.0.0.2',
        headers: { 'x-forwarded-for': '203.0.113.9' },
        body: { username: 'admin', password: 'admin-password-1' },
      });
      assert.equal(res.status, 200, res.text);
      const own = res.json().data.token as string;
      const audit = await call('GET', '/console/api/audit-logs?action=login&page_size=1', {
        port: consolePort,
        token: own,
      });
      return audit.json().data[0].ip as string;
    };
    assert.equal(await loginFrom(port), '127.0.0.2', 'trust_proxy: the address nginx saw');
    assert.equal(await loginFrom(untrustedPort), '127.0.0.1', "without it: nginx's own address");
  });
});

test('examples/console.service runs the packed bin, checks the configuration first and outwaits the drain', () => {
  const unit = readFileSync(new URL('../examples/console.service', import.meta.url), 'utf8');
  const value = (key: string) => new RegExp(`^${key}=(.*)$`, 'm').exec(unit)?.[1];
  const bin = '/opt/console/node_modules/console-admin/bin/console.mjs';
  assert.match(value('ExecStartPre') ?? '', new RegExp(`${bin} config check --config `));
  assert.match(value('ExecStart') ?? '', new RegExp(`${bin} serve --config `));
  assert.equal(value('KillSignal'), 'SIGTERM');
  const drainSeconds = loadConfig({ env: {} }).server.shutdown_timeout / 1000;
  assert.ok(Number(value('TimeoutStopSec')) > drainSeconds, 'systemd waits longer than the drain takes');
});
