import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lruCache } from '../lib/lru.ts';

test('the entry read least recently goes first, whatever its place when it was read', () => {
  const cache = lruCache<string, number>(4);
  for (const [i, key] of ['a', 'b', 'c', 'd'].entries()) cache.set(key, i);
  // c is read while in the newer half of the order, then a and b: d is now the one read or written longest ago.
  for (const key of ['c', 'a', 'b']) cache.get(key);
  cache.set('e', 4);
  assert.equal(cache.get('d'), undefined);
  assert.deepEqual(
    ['a', 'b', 'c', 'e'].map((key) => cache.get(key)),
    [0, 1, 2, 4],
  );
});

test('a full cache taking a new key per call keeps the newest `max`', () => {
  const cache = lruCache<string, number>(1000);
  for (let i = 0; i < 5000; i++) cache.set(`k${i}`, i);
  assert.equal(cache.get('k3999'), undefined);
  assert.equal(cache.get('k4000'), 4000);
  assert.equal(cache.get('k4999'), 4999);
});

test('a bound of 0 (cache.size: 0) keeps nothing', () => {
  const cache = lruCache<string, number>(0);
  cache.set('a', 1);
  assert.equal(cache.get('a'), undefined);
});

test('weighed entries are bounded by their weight together, and one heavier than the bound is not kept', () => {
  const cache = lruCache<string, number[]>(5, (rows) => rows.length);
  cache.set('a', [1, 2]);
  cache.set('b', [1, 2]);
  cache.set('c', [1, 2]);
  assert.equal(cache.get('a'), undefined, 'three entries of 2 weigh over 5: the oldest goes');
  assert.deepEqual(cache.get('c'), [1, 2]);
  cache.set('d', [1, 2, 3, 4, 5, 6]);
  assert.equal(cache.get('d'), undefined);
  assert.deepEqual(cache.get('c'), [1, 2]);
});
