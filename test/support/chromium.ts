import { chromium, type Browser, type Page } from 'playwright-core';

/** The chromium binary the browser tests drive (CI sets TEST_CHROMIUM=/usr/bin/chromium); without it they skip. */
export const CHROMIUM = process.env.TEST_CHROMIUM;

export const chromiumSkip = CHROMIUM
  ? false
  : 'TEST_CHROMIUM is not set (path of a chromium binary, e.g. /usr/bin/chromium)';

const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}

// A live task stream the page closes itself (leaving a page, signing out, a session ended) shows as an aborted request.
const closedStream = (url: string, error: string) =>
  error === 'net::ERR_ABORTED' && /\/(trpc\/tasks\.events|api\/tasks\/events)/.test(url);

// The shell fetches the code of the pages the caller may open ahead of use; leaving or reloading the page while
// it does cuts those fetches short.
const codeFetchedAhead = (url: string, error: string) =>
  error === 'net::ERR_ABORTED' && /\/assets\/[^/?]+\.js$/.test(url);

/**
 * Collects what a page reports going wrong: console errors and warnings (a CSP violation among them), uncaught
 * exceptions, and failed requests except those `expected` accepts (a stream the page closes on purpose).
 */
export function watchProblems(page: Page, expected: (url: string, error: string) => boolean = () => false): string[] {
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('requestfailed', (r) => {
    const error = r.failure()?.errorText ?? '';
    if (!expected(r.url(), error) && !closedStream(r.url(), error) && !codeFetchedAhead(r.url(), error))
      problems.push(`failed: ${r.url()} ${error}`);
  });
  return problems;
}
