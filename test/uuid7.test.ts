import assert from 'node:assert/strict';
import { test } from 'node:test';
import { v7 } from 'uuid';

// The task engine relies on this for the order of log lines within one millisecond (docs/decisions.md).
test('UUIDv7 ids made in a burst sort in the order they were made', () => {
  const ids = Array.from({ length: 20_000 }, () => v7());
  assert.deepEqual([...ids].sort(), ids);
  assert.ok(ids.every((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id)));
});
