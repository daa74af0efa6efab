import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { chromiumSkip, launchChromium, watchProblems } from './support/chromium.ts';
import { ADMIN_PASSWORD, lanes, startConsole, type TestConsole } from './support/harness.ts';

/** An address of this machine that is not loopback: browsers treat plain http there differently from 127.0.0.1. */
function lanAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
}

// The docs page depends on no database, so SQLite is enough.
describe('docs page in a browser', { skip: chromiumSkip }, () => {
  let t: TestConsole;
  let browser: Browser;
  let port: number;
  let operations: number;
  before(async () => {
    t = await startConsole(lanes()[0]!, { server: { host: '0.0.0.0' } });
    ({ port } = await t.c.listen());
    const doc = (await t.request('GET', '/api/openapi.json')).body as { paths: Record<string, object> };
    operations = Object.values(doc.paths).reduce((n, item) => n + Object.keys(item).length, 0);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const open = async (host: string) => {
    const page = await browser.newPage();
    const problems = watchProblems(page);
    await page.goto(`http://${host}:${port}/docs/`);
    await page.locator('.opblock').first().waitFor({ timeout: 15_000 });
    return { page, problems };
  };

  test('swagger UI renders every operation, titled Console API, without CSP or script errors', async () => {
    const { page, problems } = await open('127.0.0.1');
    assert.ok(operations > 10, `the document has ${operations} operations`);
    assert.equal(await page.locator('.opblock').count(), operations);
    assert.match(await page.locator('.info .title').innerText(), /Console API/);
    assert.equal(await page.title(), 'Console API');
    // The bearer scheme from the document: the page offers to authorize.
    assert.equal(await page.locator('.btn.authorize').count(), 1);
    const shot = join(mkdtempSync(join(tmpdir(), 'console-docs-')), 'docs.png');
    await page.screenshot({ path: shot, fullPage: false });
    console.log(`# screenshot: ${shot}`);
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('"Try it out" reaches the API from the page (the CSP allows it): log in as admin', async () => {
    const { page, problems } = await open('127.0.0.1');
    const login = page.locator('.opblock', {
      has: page.locator('.opblock-summary-path', { hasText: /^\/auth\/login$/ }),
    });
    await login.locator('.opblock-summary').click();
    await login.getByRole('button', { name: 'Try it out' }).click();
    await login
      .locator('textarea.body-param__text')
      .fill(JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }));
    await login.getByRole('button', { name: 'Execute' }).click();
    const status = login.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor({ timeout: 15_000 });
    assert.equal((await status.innerText()).trim(), '200');
    const shown = await login.locator('.live-responses-table').first().innerText();
    assert.match(shown, /"code": "0"/);
    assert.match(shown, /"token": "ey/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  test(
    'the page also works over plain http on a non-loopback address',
    { skip: lanAddress() ? false : 'no non-loopback IPv4 address' },
    async () => {
      // A CSP with upgrade-insecure-requests would send the page's own scripts to https:// here and leave it blank.
      const { page, problems } = await open(lanAddress()!);
      assert.equal(await page.locator('.opblock').count(), operations);
      assert.deepEqual(problems, []);
      await page.close();
    },
  );
});
