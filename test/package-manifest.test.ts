// What the package says about itself and what its tarball holds, read with `npm pack --dry-run` (no build: the
// compiled part is checked by package-consumer.test.ts, which packs for real).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  name: string;
  version: string;
  bin: Record<string, string>;
  repository?: { type: string; url: string };
  bugs?: { url: string };
  homepage?: string;
};

test('the tarball holds the docs and the examples beside the README', async () => {
  const { stdout } = await promisify(execFile)(
    'npm',
    ['pack', '--dry-run', '--json', '--ignore-scripts', '--no-audit', '--no-fund'],
    { cwd: ROOT, maxBuffer: 64 << 20 },
  );
  const [packed] = JSON.parse(stdout) as { files: { path: string }[] }[];
  const paths = new Set(packed!.files.map((f) => f.path));
  for (const file of [
    'README.md',
    'docs/architecture.md',
    'docs/cli.md',
    'docs/engine.md',
    'docs/grafana-dashboard.json',
    'examples/typed-client.ts',
    'examples/live-tasks/index.html',
    'examples/nginx.conf',
    'examples/console.service',
  ])
    assert.ok(paths.has(file), `${file} is packed`);
  // README's pictures are for the repository page; the package stays small without them.
  assert.deepEqual(
    [...paths].filter((p) => p.startsWith('docs/screenshots/')),
    [],
  );
});

test('`npx <package name>` runs the CLI: a bin is named as the package; `console` stays', () => {
  assert.equal(manifest.bin[manifest.name], './bin/console.mjs');
  assert.equal(manifest.bin.console, './bin/console.mjs');
});

test('repository, bugs and homepage point at one repository', () => {
  const repo = manifest.repository?.url.replace(/^git\+/, '').replace(/\.git$/, '');
  assert.equal(manifest.repository?.type, 'git');
  assert.match(repo ?? '', /^https:\/\//);
  assert.equal(manifest.bugs?.url, `${repo}/issues`);
  assert.equal(manifest.homepage, `${repo}#readme`);
});

test('the version in package.json has its CHANGELOG section, above which only Unreleased stands', () => {
  const changelog = readFileSync(new URL('../CHANGELOG.md', import.meta.url), 'utf8');
  const sections = [...changelog.matchAll(/^## (.+)$/gm)].map((m) => m[1]!);
  assert.equal(sections[0], 'Unreleased');
  assert.match(
    sections[1] ?? '',
    new RegExp(`^\\[${manifest.version.replaceAll('.', '\\.')}\\] - \\d{4}-\\d{2}-\\d{2}$`),
  );
});
