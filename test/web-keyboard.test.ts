import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { chromiumSkip, watchProblems } from './support/chromium.ts';
import { ADMIN_PASSWORD, type TestConsole } from './support/harness.ts';
import { assertAccessible, signIn, startWebConsole, type WebConsole } from './support/web-ui.ts';

/**
 * The focused element, for messages; whether its focus is drawn (its outline, shadow or border differ from the
 * same element unfocused, measured by blurring and focusing it again); and whether it is inside a dialog.
 */
async function focused(page: Page): Promise<{ what: string; visible: boolean; inDialog: boolean }> {
  return page.evaluate(`(async () => {
    const e = document.activeElement;
    // A field inside a wrapper (a password field with its eye button) draws the focus on the wrapper.
    const look = () =>
      [e, e.parentElement, e.parentElement?.parentElement]
        .filter(Boolean)
        .map((n) => {
          const s = getComputedStyle(n);
          return [s.outlineStyle, s.outlineWidth, s.outlineColor, s.boxShadow, s.borderColor].join('|');
        })
        .join('/');
    // Inputs fade their border in and out (100 ms): read each look once it has settled.
    const settled = () => new Promise((resolve) => setTimeout(resolve, 200));
    await settled();
    const withFocus = look();
    e.blur();
    await settled();
    const without = look();
    e.focus();
    await settled();
    return {
      what: e.tagName + ' ' + (e.getAttribute('aria-label') || e.textContent || '').trim().slice(0, 40),
      visible: withFocus !== without,
      inDialog: !!e.closest('[role="dialog"]'),
    };
  })()`);
}

// The browser part runs on SQLite: what it checks is the page, not the database.
describe('web console by keyboard, and the theme switch', { skip: chromiumSkip }, () => {
  let t: TestConsole;
  let browser: Browser;
  let base: string;
  let web: WebConsole;
  before(async () => {
    ({ t, base, browser } = web = await startWebConsole());
  });
  after(() => web?.close());

  test('sign in, open a dialog, stay inside it and close it with Escape, all by keyboard with visible focus', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const problems = watchProblems(page);
    await page.goto(`${base}/admin/`);
    await page.getByRole('textbox', { name: 'Username', exact: true }).waitFor();
    // From the page's start, Tab reaches the username field (after the skip link, if shown) and then the password.
    for (let i = 0; i < 6 && !(await focused(page)).what.startsWith('INPUT'); i++) await page.keyboard.press('Tab');
    assert.equal(
      await page.evaluate('document.activeElement.getAttribute("autocomplete") || document.activeElement.name'),
      'username',
    );
    assert.ok((await focused(page)).visible, 'the username field shows its focus');
    await page.keyboard.type('admin');
    await page.keyboard.press('Tab');
    await page.keyboard.type(ADMIN_PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: /User menu/ }).waitFor();

    await page.goto(`${base}/admin/users`);
    const create = page.getByRole('button', { name: 'Create user' });
    await create.focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab');
      const now = await focused(page);
      assert.ok(now.inDialog, `Tab ${i + 1} left the dialog for ${now.what}`);
      assert.ok(now.visible, `Tab ${i + 1}: ${now.what} shows no focus`);
    }
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('the theme switch turns the pages dark and light, and the choice survives a reload', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(page, `${base}/admin/`);
    const scheme = () => page.evaluate('document.documentElement.getAttribute("data-mantine-color-scheme")');
    for (const [name, value] of [
      ['Dark', 'dark'],
      ['Light', 'light'],
      ['Dark', 'dark'],
    ] as const) {
      await page.getByRole('button', { name: /User menu/ }).click();
      await page.getByRole('menuitem', { name }).click();
      assert.equal(await scheme(), value, name);
    }
    await page.reload();
    await page.getByRole('button', { name: /User menu/ }).waitFor();
    assert.equal(await scheme(), 'dark', 'kept across a reload');
    await assertAccessible(page, 'overview in the chosen theme');
    await page.close();
  });
});
