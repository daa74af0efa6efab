import assert from 'node:assert/strict';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { firstLoadFiles, FIRST_LOAD_BUDGET } from '../tools/build-web.ts';
import { WEB_BUILD_DIR } from '../server/http/web-console.ts';
import { lanes, startConsole, type TestConsole } from './support/harness.ts';
import { ensureWebBuild } from './support/web-build.ts';

// How the service serves the built web console; nothing here depends on the database, so SQLite is enough.
describe('web console serving', () => {
  let t: TestConsole;
  let prefixed: TestConsole;
  let off: TestConsole;
  before(async () => {
    ensureWebBuild();
    t = await startConsole(lanes()[0]!);
    prefixed = await startConsole(lanes()[0]!, {
      server: { root_url: 'https://example.test/tools/console/' },
      web: { base_path: '/ui' },
    });
    off = await startConsole(lanes()[0]!, { web: { enabled: false } });
  });
  after(async () => {
    await t?.close();
    await prefixed?.close();
    await off?.close();
  });

  const get = (c: TestConsole, url: string, headers: Record<string, string> = {}) =>
    c.c.http.inject({ method: 'GET', url, headers });

  test('GET / and the bare base path redirect to the console', async () => {
    for (const url of ['/', '/admin']) {
      const res = await get(t, url);
      assert.equal(res.statusCode, 302, url);
      assert.equal(res.headers.location, '/admin/');
    }
  });

  test('the page: no-cache with an ETag, a strict CSP, its addresses written in, at any path under the base', async () => {
    for (const url of ['/admin/', '/admin/users', '/admin/users/1/deep?x=1']) {
      const res = await get(t, url);
      assert.equal(res.statusCode, 200, url);
      assert.match(String(res.headers['content-type']), /^text\/html/);
      assert.equal(res.headers['cache-control'], 'no-cache');
      const csp = String(res.headers['content-security-policy']);
      assert.match(csp, /script-src 'self'(;|$)/);
      assert.match(csp, /style-src 'self'(;|$)/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.match(res.body, /<base href="\/admin\/"/);
      assert.match(res.body, /<meta name="console-root" content="\/"/);
      assert.doesNotMatch(res.body, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    }
    const first = await get(t, '/admin/');
    const again = await get(t, '/admin/tasks', { 'if-none-match': String(first.headers.etag) });
    assert.equal(again.statusCode, 304);
  });

  test('behind a proxy prefix (server.root_url) and at another web.base_path, no address is baked in', async () => {
    assert.equal((await get(prefixed, '/')).headers.location, '/tools/console/ui/');
    const page = await get(prefixed, '/ui/users');
    assert.match(page.body, /<base href="\/tools\/console\/ui\/"/);
    assert.match(page.body, /<meta name="console-root" content="\/tools\/console\/"/);
    for (const [, path] of page.body.matchAll(/<(?:script|link)[^>]*\b(?:src|href)="([^"]+)"/g))
      assert.match(path!, /^\.\//, `relative asset address: ${path}`);
    assert.equal((await get(prefixed, '/admin/')).statusCode, 404);
  });

  test('hashed assets: immutable for a year, gzip or brotli as accepted, a missing one is a 404 envelope', async () => {
    const files = firstLoadFiles(WEB_BUILD_DIR);
    assert.ok(files.some((f) => f.endsWith('.js')) && files.some((f) => f.endsWith('.css')), files.join());
    const script = files.find((f) => f.endsWith('.js'))!;
    const plain = await get(t, `/admin/${script}`);
    assert.equal(plain.statusCode, 200);
    assert.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.match(String(plain.headers['content-type']), /^text\/javascript/);
    assert.equal(plain.headers['content-encoding'], undefined);
    const gz = await get(t, `/admin/${script}`, { 'accept-encoding': 'gzip, deflate' });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.equal(gz.headers.vary, 'Accept-Encoding');
    assert.deepEqual(gunzipSync(gz.rawPayload), plain.rawPayload);
    const br = await get(t, `/admin/${script}`, { 'accept-encoding': 'gzip, br' });
    assert.equal(br.headers['content-encoding'], 'br');
    assert.deepEqual(brotliDecompressSync(br.rawPayload), plain.rawPayload);
    const refused = await get(t, `/admin/${script}`, { 'accept-encoding': 'br;q=0, gzip' });
    assert.equal(refused.headers['content-encoding'], 'gzip');
    const page = await get(t, '/admin/users', { 'accept-encoding': 'br' });
    assert.equal(page.headers['content-encoding'], 'br');

    const missing = await get(t, '/admin/assets/missing-abc123.js');
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().code, 'E4041');
  });

  test("the sign-in page's scripts and styles stay within 250 KB compressed", async () => {
    let total = 0;
    for (const file of firstLoadFiles(WEB_BUILD_DIR))
      total += (await get(t, `/admin/${file}`, { 'accept-encoding': 'gzip' })).rawPayload.length;
    assert.ok(total <= FIRST_LOAD_BUDGET, `${total} bytes`);
    assert.ok(total > 10_000, `${total} bytes: the first load was found`);
  });

  test('never shadows /api, /trpc, /docs, /metrics, /healthz, /readyz', async () => {
    assert.equal((await get(t, '/api/nope')).json().code, 'E4041');
    assert.equal((await get(t, '/api/users')).statusCode, 401);
    assert.equal((await get(t, '/trpc/auth.me')).statusCode, 401);
    assert.equal((await get(t, '/healthz')).json().status, 'ok');
    assert.equal((await get(t, '/readyz')).statusCode, 200);
    assert.match(String((await get(t, '/metrics')).headers['content-type']), /^text\/plain/);
    assert.equal((await get(t, '/docs/')).statusCode, 200);
    // An unknown path outside the base path stays the API's 404, not the page.
    const other = await get(t, '/elsewhere');
    assert.equal(other.statusCode, 404);
    assert.equal(other.json().code, 'E4041');
  });

  test('web.base_path may not shadow a service path; web.enabled false serves nothing', async () => {
    await assert.rejects(startConsole(lanes()[0]!, { web: { base_path: '/api' } }), /web\.base_path/);
    assert.equal((await get(off, '/')).statusCode, 404);
    assert.equal((await get(off, '/admin/')).statusCode, 404);
  });
});
