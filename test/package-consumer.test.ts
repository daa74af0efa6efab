// The package as a frontend gets it: `npm pack`, installed with --ignore-scripts (no native build) into a
// project of its own beside @trpc/client and TypeScript, type-checked under NodeNext and bundler resolution
// with nothing but strict on, then run against a live server.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ADMIN_PASSWORD, lanes, startConsole, type TestConsole } from './support/harness.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
// The frontend's own dependencies, at the versions this project is tested with.
const FRONTEND_DEPS = ['@trpc/client', 'typescript'].map((name) => `${name}@${manifest.devDependencies[name]}`);
// Installing the tarball's dependencies is the slow part: they are kept between runs, keyed by what they are.
const CACHE = join(ROOT, 'node_modules', '.cache', 'console-consumer');
const CACHE_KEY = createHash('sha256')
  .update(JSON.stringify([manifest.dependencies, FRONTEND_DEPS]))
  .digest('hex');

const npm = (args: string[], cwd: string) =>
  run('npm', [...args, '--no-audit', '--no-fund'], { cwd, maxBuffer: 64 << 20 });

/** A consumer project with the freshly packed tarball in node_modules/console-admin. */
async function consumerProject(tarball: string): Promise<string> {
  const keyFile = join(CACHE, '.key');
  if (!existsSync(keyFile) || readFileSync(keyFile, 'utf8') !== CACHE_KEY) {
    rmSync(CACHE, { recursive: true, force: true });
    mkdirSync(CACHE, { recursive: true });
    writeFileSync(join(CACHE, 'package.json'), JSON.stringify({ name: 'frontend', private: true, type: 'module' }));
    await npm(['install', '--ignore-scripts', tarball, ...FRONTEND_DEPS], CACHE);
    writeFileSync(keyFile, CACHE_KEY);
  } else {
    // Same dependencies: only the package itself is new, unpacked where npm would put it.
    const unpacked = mkdtempSync(join(tmpdir(), 'console-unpacked-'));
    await run('tar', ['-xzf', tarball, '-C', unpacked]);
    rmSync(join(CACHE, 'node_modules', 'console-admin'), { recursive: true, force: true });
    cpSync(join(unpacked, 'package'), join(CACHE, 'node_modules', 'console-admin'), { recursive: true });
    rmSync(unpacked, { recursive: true, force: true });
  }
  return CACHE;
}

const USAGE = `import type { AppRouter, ErrorShape, RouterInputs, RouterOutputs } from 'console-admin/client';
import type { Console, ConsoleConfigInput } from 'console-admin';

export type Created = RouterOutputs['users']['create']['id'];
export const input: RouterInputs['users']['list'] = { current: 1, page_size: 5, search: 'a' };
export type Code = ErrorShape['appCode'];
export type Router = AppRouter;
// @ts-expect-error a user has no password in any answer
export type Leak = RouterOutputs['users']['get']['password'];
// @ts-expect-error page_size is a number
export const wrong: RouterInputs['users']['list'] = { page_size: 'ten' };
// The main entry is for servers that embed the service; its types check too.
export type Embedded = Pick<Console, 'listen' | 'close'> & { config: ConsoleConfigInput };
`;

async function typeCheck(dir: string, options: Record<string, string | boolean>, files: string[]): Promise<void> {
  writeFileSync(
    join(dir, 'tsconfig.check.json'),
    JSON.stringify({ compilerOptions: { strict: true, noEmit: true, ...options }, files }),
  );
  const tsc = join(dir, 'node_modules', 'typescript', 'bin', 'tsc');
  await run(process.execPath, [tsc, '-p', 'tsconfig.check.json'], { cwd: dir }).catch((error: { stdout: string }) => {
    assert.fail(`tsc ${JSON.stringify(options)} failed:\n${error.stdout}`);
  });
}

describe('the packed package, as a frontend installs it', () => {
  let t: TestConsole;
  let baseUrl: string;
  let dir: string;
  const packDir = mkdtempSync(join(tmpdir(), 'console-pack-'));

  before(async () => {
    const { stdout } = await npm(['pack', '--json', '--pack-destination', packDir], ROOT);
    const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
    assert.ok(packed!.files.some((f) => f.path === 'dist/client.d.ts'));
    // The web console, built and precompressed, so that an application embedding the service serves it too.
    assert.ok(packed!.files.some((f) => f.path === 'dist/web/index.html'));
    assert.ok(packed!.files.some((f) => /^dist\/web\/assets\/.+\.js\.br$/.test(f.path)));
    assert.ok(!packed!.files.some((f) => f.path === 'dist/web/.sources'));
    for (const file of ['LICENSE', 'CHANGELOG.md', 'config.example.yaml', 'README.md'])
      assert.ok(
        packed!.files.some((f) => f.path === file),
        `${file} is packed`,
      );
    for (const file of ['docs/cli.md', 'examples/typed-client.ts'])
      assert.ok(
        packed!.files.some((f) => f.path === file),
        `${file} is packed`,
      );
    // Compiled code and declarations only: no TypeScript source (but the examples, to read), tests or benchmarks.
    assert.deepEqual(
      packed!.files.filter((f) => /\.ts$/.test(f.path) && !f.path.endsWith('.d.ts') && !f.path.startsWith('examples/')),
      [],
    );
    assert.deepEqual(
      packed!.files.filter((f) => /^(test|tools\/bench|dist\/test|dist\/tools\/bench)\//.test(f.path)),
      [],
    );
    // Its real path: the example runs its main part only when started as itself (import.meta.url is resolved).
    dir = realpathSync(await consumerProject(join(packDir, packed!.filename)));
    cpSync(join(ROOT, 'examples', 'typed-client.ts'), join(dir, 'typed-client.ts'));
    writeFileSync(join(dir, 'usage.ts'), USAGE);
    t = await startConsole(lanes()[0]!);
    const { port } = await t.c.listen();
    baseUrl = `http://127.0.0.1:${port}`;
  });
  after(async () => {
    await t?.close();
    rmSync(packDir, { recursive: true, force: true });
  });

  test('the bin named as the package (what `npx console-admin` runs) is the compiled CLI', async () => {
    const installed = join(dir, 'node_modules', 'console-admin');
    const own = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
      bin: Record<string, string>;
    };
    const { stdout } = await run(process.execPath, [join(installed, own.bin[own.name]!), '--version']);
    assert.equal(stdout.trim(), own.version);
  });

  test('its types check with NodeNext resolution, defaults otherwise', async () => {
    await typeCheck(dir, { module: 'nodenext' }, ['typed-client.ts', 'usage.ts']);
  });

  test('its types check with bundler resolution', async () => {
    await typeCheck(dir, { module: 'esnext', moduleResolution: 'bundler', target: 'es2022' }, [
      'typed-client.ts',
      'usage.ts',
    ]);
  });

  test('a wrong input type does not compile', async () => {
    writeFileSync(
      join(dir, 'wrong.ts'),
      `import type { RouterInputs } from 'console-admin/client';\nexport const x: RouterInputs['auth']['login'] = { username: 'a', password: 1 };\n`,
    );
    await assert.rejects(typeCheck(dir, { module: 'nodenext' }, ['wrong.ts']), /wrong\.ts\(2,[0-9]+\): error TS2322/);
  });

  test('the compiled client calls a query, a mutation and meets an error on a live server', async () => {
    await run(
      process.execPath,
      [
        join(dir, 'node_modules', 'typescript', 'bin', 'tsc'),
        '--module',
        'nodenext',
        '--strict',
        '--outDir',
        'out',
        'typed-client.ts',
      ],
      { cwd: dir },
    );
    const { stdout } = await run(
      process.execPath,
      [join(dir, 'out', 'typed-client.js'), baseUrl, 'admin', ADMIN_PASSWORD],
      { cwd: dir },
    );
    assert.match(stdout, /Logged in as admin \(\d+ permissions\)\. 1 users:/);
    assert.match(stdout, /admin\s+admin@\S+\s+active/);
    const failed = await run(
      process.execPath,
      [join(dir, 'out', 'typed-client.js'), baseUrl, 'admin', 'wrong-password'],
      { cwd: dir },
    ).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    assert.equal(failed?.code, 1);
    assert.match(failed!.stderr, /failed: E4011/);
  });

  test('the client entry has no run-time exports: nothing of the server reaches a bundle', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--input-type=module', '-e', "console.log(JSON.stringify(Object.keys(await import('console-admin/client'))))"],
      { cwd: dir },
    );
    assert.equal(stdout.trim(), '[]');
  });
});
