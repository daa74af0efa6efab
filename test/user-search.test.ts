import assert from 'node:assert/strict';
import { test } from 'node:test';
import { matchingUsers, userKeysOf } from '../routers/users/search.ts';

/** What a search must find: every user whose username or email holds the term, newest (first row) first. */
function naive(rows: { id: string; username_key: string; email_key: string }[], term: string): string[] {
  const needle = term.toLowerCase();
  return rows.filter((r) => r.username_key.includes(needle) || r.email_key.includes(needle)).map((r) => r.id);
}

// A small alphabet so that pieces repeat across users and terms often match several of them.
const letters = 'abé01@.x';
const word = (n: number, next: () => number) =>
  Array.from({ length: n }, () => letters[Math.floor(next() * letters.length)]).join('');

test('the index finds exactly the users a scan of every key finds, in the same order', () => {
  let seed = 7;
  const next = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  const rows = Array.from({ length: 400 }, (_, i) => ({
    id: `u${i}`,
    username_key: word(3 + Math.floor(next() * 8), next),
    email_key: `${word(2 + Math.floor(next() * 6), next)}@x.test`,
  }));
  const keys = userKeysOf(rows);
  const terms = [
    '',
    'a',
    'é0',
    '@x.',
    'x.test',
    'ab',
    'ABé',
    'st',
    'zzz',
    ...Array.from({ length: 300 }, () => word(1 + Math.floor(next() * 6), next)),
  ];
  for (const term of terms)
    assert.deepEqual(matchingUsers(keys, term), naive(rows, term), `term ${JSON.stringify(term)}`);
});

test('a term never matches across the username and the email, nor across two users', () => {
  const rows = [
    { id: 'new', username_key: 'ann', email_key: 'bob@x.test' },
    { id: 'old', username_key: 'test', email_key: 'carl@x.test' },
  ];
  const keys = userKeysOf(rows);
  assert.deepEqual(matchingUsers(keys, 'annbob'), []);
  assert.deepEqual(matchingUsers(keys, 'nnb'), []);
  assert.deepEqual(matchingUsers(keys, 'testtest'), []);
  assert.deepEqual(matchingUsers(keys, 'x.testtest'), []);
  assert.deepEqual(matchingUsers(keys, 'x.test'), ['new', 'old']);
  assert.deepEqual(matchingUsers(keys, 'ann\u0000bob'), []);
});
