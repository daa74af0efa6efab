// Serves examples/live-tasks/index.html from an origin of its own, as a separate frontend would be served:
//
//   node --import tsx examples/live-tasks/serve.ts [console-url] [port]     (defaults http://localhost:8080, 8090)
//
// Console must allow this origin (`server.cors_origins`: the default `*`, or the printed origin). The page gets a
// strict content security policy of its own: its one script and style by their hashes, and network access only
// to the Console its `?api=` names.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const PAGE = readFileSync(new URL('index.html', import.meta.url), 'utf8');
const DEFAULT_CONSOLE = 'http://localhost:8080';

/** The CSP source of each inline `<script>` or `<style>` block of the page. */
function inlineHashes(tag: 'script' | 'style'): string {
  const blocks = PAGE.matchAll(new RegExp(`<${tag}[^>]*>([\\s\\S]*?)</${tag}>`, 'g'));
  return [...blocks].map((m) => `'sha256-${createHash('sha256').update(m[1]!).digest('base64')}'`).join(' ');
}

const SCRIPTS = inlineHashes('script');
const STYLES = inlineHashes('style');

/** The Console origin the page will talk to: its `?api=` when that is an http(s) URL, else the default. */
function consoleOrigin(search: URLSearchParams): string {
  try {
    const url = new URL(search.get('api') ?? DEFAULT_CONSOLE);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url.origin;
  } catch {
    // Not a URL: the page's own check will say so when it logs in.
  }
  return new URL(DEFAULT_CONSOLE).origin;
}

function sendPage(res: ServerResponse, search: URLSearchParams): void {
  res.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': [
      "default-src 'none'",
      `script-src ${SCRIPTS}`,
      `style-src ${STYLES}`,
      `connect-src ${consoleOrigin(search)}`,
      'img-src data:',
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ].join('; '),
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  });
  res.end(PAGE);
}

export interface PageServer {
  /** The page's origin, e.g. `http://127.0.0.1:8090`: the one `server.cors_origins` must allow. */
  origin: string;
  /** The page's address for a Console at `consoleUrl`. */
  urlFor(consoleUrl: string): string;
  close(): Promise<void>;
}

export async function serveLiveTasksPage(port = 8090, host = '127.0.0.1'): Promise<PageServer> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://page');
    if (req.method === 'GET' && (url.pathname === '/' || url.pathname === '/index.html'))
      return sendPage(res, url.searchParams);
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
  const origin = `http://${host}:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    urlFor: (consoleUrl) => `${origin}/?${new URLSearchParams({ api: consoleUrl })}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [consoleUrl = DEFAULT_CONSOLE, port = '8090'] = process.argv.slice(2);
  const page = await serveLiveTasksPage(Number(port));
  console.log(`Open ${page.urlFor(consoleUrl)} (Console must allow the origin ${page.origin} in server.cors_origins)`);
}
