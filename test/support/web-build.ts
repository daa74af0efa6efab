import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let built = false;

/** Builds the web console into dist/web unless it is built from the current sources (`npm run build:web`). */
export function ensureWebBuild(): void {
  if (built) return;
  execFileSync(process.execPath, ['--import', 'tsx', 'tools/build-web.ts'], { cwd: ROOT, stdio: 'pipe' });
  built = true;
}
