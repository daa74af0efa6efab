import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { configKeys } from '../server/config/load.ts';

// The README's configuration reference must name every key the schema accepts.
test('README documents every configuration key', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  // A key is documented by name (a whole object, by one of its keys), or by a `parent.*` row.
  const documented = (key: string) => {
    if (readme.includes(`\`${key}`)) return true;
    const parts = key.split('.');
    return parts.some((_, i) => i > 0 && readme.includes(`\`${parts.slice(0, i).join('.')}.*\``));
  };
  const missing = configKeys()
    .map((k) => k.key)
    .filter((k) => !documented(k));
  assert.deepEqual(missing, []);
});

test('README shows the two commands of the quick start', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  assert.match(readme, /npm install && npm start/);
  assert.match(readme, /npm test/);
});
