import { fileURLToPath } from 'node:url';

/**
 * Node arguments that run the `console` command from source through tsx, from any working directory. The
 * `console` bin runs the compiled build (dist/), which a test run must not depend on or, stale, be fooled by.
 */
export const SOURCE_CLI = [
  '--import',
  import.meta.resolve('tsx'),
  fileURLToPath(new URL('../../server/cli.ts', import.meta.url)),
];
