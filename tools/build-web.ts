// `npm run build:web`: builds the web console (web/) into dist/web with Vite, writes a .gz and a .br beside each
// text file for the service to send as they are, and prints the compressed sizes. Skipped when nothing it is built
// from changed since the last build, so an unchanged `npm start` does not build the UI again.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { extname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WEB = join(ROOT, 'web');
const OUT = join(ROOT, 'dist', 'web');
const STAMP = join(OUT, '.sources');
/** The sign-in page (the first chunk: its scripts and styles) must stay within this, compressed. */
export const FIRST_LOAD_BUDGET = 250 * 1024;
const COMPRESSIBLE = new Set(['.js', '.css', '.html', '.svg', '.json', '.txt']);

const files = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
  );

/** A digest of everything the build reads: the UI's sources, the client types, and the locked dependencies. */
function sourcesDigest(): string {
  const hash = createHash('sha256');
  for (const path of [...files(WEB).sort(), join(ROOT, 'client.ts'), join(ROOT, 'package-lock.json')]) {
    hash.update(relative(ROOT, path)).update('\0').update(readFileSync(path)).update('\0');
  }
  return hash.digest('hex');
}

/** The scripts and stylesheets index.html loads at once (entry, its preloads, its CSS): the sign-in page. */
export function firstLoadFiles(dir: string): string[] {
  const html = readFileSync(join(dir, 'index.html'), 'utf8');
  return [...html.matchAll(/(?:src|href)="\.\/(assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
}

// On stderr: `npm pack --json` (prepack builds) keeps stdout for its JSON.
const log = (line: string) => process.stderr.write(`${line}\n`);
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;

function compressAll(): { path: string; raw: number; gzip: number; br: number }[] {
  return files(OUT)
    .filter((path) => COMPRESSIBLE.has(extname(path)))
    .map((path) => {
      const body = readFileSync(path);
      const gzip = gzipSync(body, { level: 9 });
      const br = brotliCompressSync(body, {
        params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length },
      });
      writeFileSync(`${path}.gz`, gzip);
      writeFileSync(`${path}.br`, br);
      return { path: relative(OUT, path), raw: body.length, gzip: gzip.length, br: br.length };
    });
}

async function main() {
  const digest = sourcesDigest();
  if (existsSync(STAMP) && readFileSync(STAMP, 'utf8') === digest && existsSync(join(OUT, 'index.html'))) {
    log('web: unchanged since the last build, not rebuilt (dist/web)');
    return;
  }
  const { build } = await import('vite');
  await build({ configFile: join(WEB, 'vite.config.ts'), logLevel: 'warn' });
  const sizes = compressAll().sort((a, b) => b.gzip - a.gzip);
  const first = new Set(firstLoadFiles(OUT));
  log('web: built dist/web');
  log(`  ${'file'.padEnd(44)} ${'raw'.padStart(10)} ${'gzip'.padStart(10)} ${'brotli'.padStart(10)}`);
  for (const s of sizes) {
    const mark = first.has(s.path) ? ' *' : '';
    log(
      `  ${(s.path + mark).padEnd(44)} ${kb(s.raw).padStart(10)} ${kb(s.gzip).padStart(10)} ${kb(s.br).padStart(10)}`,
    );
  }
  const firstLoad = sizes.filter((s) => first.has(s.path));
  const gzip = firstLoad.reduce((n, s) => n + s.gzip, 0);
  const br = firstLoad.reduce((n, s) => n + s.br, 0);
  log(`  * sign-in page (first load, JS + CSS): ${kb(gzip)} gzip, ${kb(br)} brotli; budget ${kb(FIRST_LOAD_BUDGET)}`);
  if (gzip > FIRST_LOAD_BUDGET) {
    console.error(`web: the sign-in page's scripts and styles exceed the budget (${kb(gzip)} gzip)`);
    process.exitCode = 1;
    return;
  }
  writeFileSync(STAMP, digest);
}

if (process.argv[1] && statSync(process.argv[1]).isFile() && fileURLToPath(import.meta.url) === process.argv[1]) {
  await main();
}
