import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { configExample } from '../server/config/example.ts';
import { configKeys, loadConfig } from '../server/config/load.ts';

const committed = readFileSync(new URL('../config.example.yaml', import.meta.url), 'utf8');

const KEY_LINE = /^( *)(?:# ( *))?([a-z_]+):/;
const DESCRIPTION_LINE = (line: string) => /^ *#/.test(line) && !KEY_LINE.test(line) && !/^ *# *-$/.test(line);

/** Every key a line of the example sets or shows switched off (`# key:`), as a dotted path, and whether a comment line is above it. */
function exampleKeys(text: string): Map<string, boolean> {
  const stack: string[] = [];
  const keys = new Map<string, boolean>();
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    const m = KEY_LINE.exec(line);
    if (!m) return;
    const depth = (m[1]!.length + (m[2]?.length ?? 0)) / 2;
    stack.length = depth;
    stack.push(m[3]!);
    const key = stack.join('.');
    if (!keys.has(key)) keys.set(key, DESCRIPTION_LINE(lines[i - 1] ?? ''));
  });
  return keys;
}

test('config.example.yaml is what `npm run config-example` writes from the schema', () => {
  assert.equal(committed, configExample(), 'config.example.yaml is stale: run npm run config-example');
});

test('config.example.yaml shows every configuration key with a one-line comment', () => {
  const shown = exampleKeys(committed);
  const keys = configKeys().map((k) => k.key);
  assert.deepEqual(
    keys.filter((k) => !shown.has(k)),
    [],
    'keys missing',
  );
  assert.deepEqual(
    keys.filter((k) => shown.get(k) === false),
    [],
    'keys without a comment above them',
  );
});

test('config.example.yaml loads to exactly the defaults', () => {
  const dir = mkdtempSync(join(tmpdir(), 'console-example-'));
  try {
    const example = join(dir, 'config.example.yaml');
    const empty = join(dir, 'empty.yaml');
    writeFileSync(example, committed);
    writeFileSync(empty, '');
    assert.deepEqual(loadConfig({ configFile: example, env: {} }), loadConfig({ configFile: empty, env: {} }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('secrets in config.example.yaml are empty placeholders', () => {
  const secrets = [...committed.matchAll(/^[ #]*([a-z_]*(?:secret|password|token|encrypt_key)):(.*)$/gm)];
  assert.ok(secrets.length >= 6, 'the example shows the secret keys');
  assert.deepEqual(
    secrets.filter(([, , value]) => !['', ' ""'].includes(value!)).map(([line]) => line),
    [],
  );
});
