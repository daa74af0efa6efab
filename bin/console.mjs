#!/usr/bin/env node
// The `console` command: the compiled CLI. A package ships dist/; a checkout makes it with `npm run build`
// (`npm run cli -- <command>` runs the source instead).
import { existsSync } from 'node:fs';

const cli = new URL('../dist/server/cli.js', import.meta.url);
if (!existsSync(cli)) {
  console.error('console: no build found (dist/server/cli.js); run `npm run build` first');
  process.exit(1);
}
await import(cli.href);
