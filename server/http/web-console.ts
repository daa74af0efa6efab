import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { NotFoundError } from '../../lib/errors.ts';
import { proxyPrefix } from './proxy-prefix.ts';

// `npm run build:web` writes the UI to dist/web; a compiled server finds it beside itself, one run from the sources
// in the project's dist/.
const COMPILED = import.meta.url.endsWith('.js');
export const WEB_BUILD_DIR = fileURLToPath(new URL(COMPILED ? '../../web/' : '../../dist/web/', import.meta.url));

/**
 * The UI's pages allow scripts, styles, fonts and requests from the service itself only: no inline script, no
 * eval, no framing. `data:` images are the component library's inline icons; `https:` images are the OAuth
 * providers' icons (`oauth.providers[].icon_url`), usually on the provider's own site. Images only: scripts,
 * styles and requests stay on the service.
 */
export const WEB_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: https:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const IMMUTABLE = 'public, max-age=31536000, immutable';
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

interface Built {
  type: string;
  body: Buffer;
  gzip?: Buffer;
  br?: Buffer;
  etag?: string;
}

export interface WebConsoleOptions {
  /** `web.base_path`, such as `/admin`. */
  basePath: string;
  /** `server.root_url`: its path is the prefix a reverse proxy serves the service under. */
  rootUrl: string;
  logger: Logger;
  dir?: string;
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
  );
}

/** Every built file by its path under the base path, with the .gz / .br the build made beside it. */
function loadBuild(dir: string): Map<string, Built> {
  const files = new Map<string, Built>();
  for (const path of walk(dir)) {
    const ext = extname(path);
    if (ext === '.gz' || ext === '.br' || !(ext in TYPES)) continue;
    const read = (suffix: string) => (existsSync(path + suffix) ? readFileSync(path + suffix) : undefined);
    files.set(relative(dir, path).split(sep).join('/'), {
      type: TYPES[ext]!,
      body: readFileSync(path),
      gzip: read('.gz'),
      br: read('.br'),
    });
  }
  return files;
}

const escapeAttribute = (s: string) =>
  s.replace(/[&"<>]/g, (c) => ({ '&': '&amp;', '"': '&quot;', '<': '&lt;', '>': '&gt;' })[c]!);

/**
 * index.html with this start's addresses: `<base href>` (the UI's own path, where its relative asset URLs and
 * routes start) and the service root the UI calls `/api` and `/trpc` under. Nothing absolute is baked in at build.
 */
function pageFor(html: Buffer, prefix: string, basePath: string): Built {
  const text = html
    .toString('utf8')
    .replace(/<base href="[^"]*"/, `<base href="${escapeAttribute(`${prefix}${basePath}/`)}"`)
    .replace(
      /<meta name="console-root" content="[^"]*"/,
      `<meta name="console-root" content="${escapeAttribute(`${prefix}/`)}"`,
    );
  const body = Buffer.from(text);
  return {
    type: TYPES['.html']!,
    body,
    gzip: gzipSync(body),
    br: brotliCompressSync(body),
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
  };
}

/** The encoding to answer with: brotli, else gzip, when the request accepts it (a q of 0 refuses). */
function encodingFor(request: FastifyRequest, file: Built): 'br' | 'gzip' | undefined {
  const accepted = new Set(
    String(request.headers['accept-encoding'] ?? '')
      .split(',')
      .map((part) => part.trim().split(';'))
      .filter(([, q]) => !q || !/^\s*q=0(\.0*)?\s*$/.test(q))
      .map(([name]) => name!.trim().toLowerCase()),
  );
  if (file.br && accepted.has('br')) return 'br';
  if (file.gzip && accepted.has('gzip')) return 'gzip';
  return undefined;
}

function send(request: FastifyRequest, reply: FastifyReply, file: Built, cacheControl: string) {
  reply
    .header('content-security-policy', WEB_CSP)
    .header('cache-control', cacheControl)
    .header('vary', 'Accept-Encoding');
  if (file.etag) {
    reply.header('etag', file.etag);
    if (request.headers['if-none-match'] === file.etag) return reply.code(304).send();
  }
  const encoding = encodingFor(request, file);
  reply.type(file.type);
  if (!encoding) return reply.send(file.body);
  return reply.header('content-encoding', encoding).send(file[encoding]);
}

/**
 * Serves the built web console at `basePath` (history routing: any path under it that is not a built file answers
 * the app, except under assets/), and redirects `/` there. Registered at the root beside /api, /trpc and /docs,
 * whose own routes always win over the base path's wildcard.
 */
export function registerWebConsole(
  app: FastifyInstance,
  { basePath, rootUrl, logger, dir = WEB_BUILD_DIR }: WebConsoleOptions,
) {
  if (!existsSync(join(dir, 'index.html'))) {
    logger.warn({ dir }, 'the web console is not built (npm run build:web); it is not served');
    return;
  }
  const files = loadBuild(dir);
  const prefix = proxyPrefix(rootUrl);
  const index = pageFor(files.get('index.html')!.body, prefix, basePath);
  files.delete('index.html');
  const home = `${prefix}${basePath}/`;

  app.get('/', (_request, reply) => reply.redirect(home));
  app.get(basePath, (_request, reply) => reply.redirect(home));
  app.get(`${basePath}/*`, (request, reply) => {
    const path = (request.params as { '*': string })['*'];
    const file = files.get(path);
    if (file) return send(request, reply, file, path.startsWith('assets/') ? IMMUTABLE : 'no-cache');
    // A missing script or stylesheet is a 404, not the page: the browser would run HTML as code.
    if (path.startsWith('assets/')) throw new NotFoundError('error.route_not_found');
    return send(request, reply, index, 'no-cache');
  });
}
