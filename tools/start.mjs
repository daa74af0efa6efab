// `npm start`: builds when a source is newer than the build, then serves from dist/ in this very process.
// The script runs it with `exec`, so npm's child is the server itself: npm waits for its drain, and a signal
// npm forwards reaches the server, which ignores a repeat (docs/decisions.md "Start-up, memory and shutdown").
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// Written last by `npm run build`: the build is whole when it is newer than every source.
const stamp = join(root, 'dist', 'openapi.json');
const SOURCES = ['index.ts', 'client.ts', 'server', 'routers', 'engine', 'db', 'lib', 'tools', 'web'];
// What the server build and the web console's build read.
const SOURCE_FILE = /\.(ts|tsx|css|html|svg)$/;
const CONFIGS = ['package.json', 'tsconfig.json', 'tsconfig.build.json'];

/** The newest modification time of the files under `path` (in folders, the sources only). */
function newest(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = 0;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const child = join(path, entry.name);
    if (entry.isDirectory() && entry.name !== 'node_modules') latest = Math.max(latest, newest(child));
    else if (SOURCE_FILE.test(entry.name)) latest = Math.max(latest, statSync(child).mtimeMs);
  }
  return latest;
}

const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
const changed = [...SOURCES, ...CONFIGS].some((p) => newest(join(root, p)) > built);
if (changed) {
  const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}
await import(new URL('../dist/server/cli.js', import.meta.url).href);
