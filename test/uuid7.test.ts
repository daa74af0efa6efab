import assert from 'node:assert/strict';
import { afterEach, mock, test } from 'node:test';
import { validate, version } from 'uuid';
import { uuidv7 } from '../lib/uuid7.ts';

// Each test's clock is ahead of the last one's (and of today): the counter's millisecond is the process's own.
afterEach(() => mock.timers.reset());

/** The 48-bit Unix time in ms an id holds. */
const msOf = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);
/** The 32-bit counter an id holds after its version nibble, around its variant bits. */
const counterOf = (id: string) => {
  const bits = BigInt(`0x${id.replace(/-/g, '')}`);
  const high = Number((bits >> 64n) & 0xfffn);
  const low = Number((bits >> 42n) & 0xfffffn);
  return high * 2 ** 20 + low;
};

// The task engine relies on this for the order of log lines within one millisecond (docs/decisions.md).
test('UUIDv7 ids made in a burst sort in the order they were made, and the uuid package reads them as v7', () => {
  const ids = Array.from({ length: 20_000 }, () => uuidv7());
  assert.deepEqual([...ids].sort(), ids);
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) {
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.ok(validate(id) && version(id) === 7, id);
  }
});

test('a UUIDv7 holds the time it was made, and its counter counts up within a millisecond', () => {
  mock.timers.enable({ apis: ['Date'], now: Date.UTC(2100, 0, 1, 0, 0, 0, 123) });
  const [a, b] = [uuidv7(), uuidv7()];
  assert.equal(msOf(a), Date.UTC(2100, 0, 1, 0, 0, 0, 123));
  assert.equal(counterOf(b), counterOf(a) + 1);
  assert.ok(counterOf(a) < 2 ** 31, 'a millisecond starts its counter in the lower half, leaving room to count');
});

test('a clock that steps back does not make an id sort before the ones made before it', () => {
  mock.timers.enable({ apis: ['Date'], now: Date.UTC(2100, 0, 1, 0, 0, 1) });
  const before = uuidv7();
  mock.timers.setTime(Date.UTC(2100, 0, 1, 0, 0, 0));
  const after = uuidv7();
  assert.ok(after > before);
  assert.equal(msOf(after), msOf(before));
});

test('random bits differ between ids of one millisecond, across refills of the random pool', () => {
  mock.timers.enable({ apis: ['Date'], now: Date.UTC(2100, 0, 1, 0, 0, 2) });
  // 4 KB of random bytes serve ~400 ids: 2,000 draw on it several times.
  const tails = Array.from({ length: 2_000 }, () => uuidv7().slice(-10));
  assert.ok(new Set(tails).size > 1_990);
});
