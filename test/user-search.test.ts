import assert from 'node:assert/strict';
import { test } from 'node:test';
import { searchPage, userKeysOf, type UserKeys } from '../routers/users/search.ts';

type Row = { id: string; username_key: string; email_key: string };

/** The ids of every user a search finds, in its order. */
const matchingUsers = (keys: UserKeys<Row>, term: string) =>
  searchPage(keys, { offset: 0, limit: Infinity, search: term }).rows.map((r) => r.id);

/** What a search must find: every user whose username or email holds the term, newest (first row) first. */
function naive(rows: Row[], term: string): string[] {
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

test('a page holds the found users from its offset, and the total counts them all', () => {
  const rows = Array.from({ length: 7 }, (_, i) => ({
    id: `u${i}`,
    username_key: `user${i}`,
    email_key: `u${i}@x.test`,
  }));
  const keys = userKeysOf(rows);
  const second = searchPage(keys, { offset: 2, limit: 2, search: 'USER' });
  assert.deepEqual(
    second.rows.map((r) => r.id),
    ['u2', 'u3'],
  );
  assert.equal(second.total, 7);
  assert.equal(second.rows[0], rows[2], 'a page holds the kept users themselves');
  assert.deepEqual(searchPage(keys, { offset: 6, limit: 2, search: 'user' }).rows, [rows[6]]);
  assert.deepEqual(searchPage(keys, { offset: 8, limit: 2, search: 'user' }), { rows: [], total: 7 });
});
