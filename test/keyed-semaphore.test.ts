import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeyedSemaphore } from '../lib/keyed-semaphore.ts';

const full = () => new Error('full');

test('at most `running` of a key run, `waiting` more wait in order, the rest are refused; other keys run freely', async () => {
  const gate = new KeyedSemaphore(2, 1);
  const releases: (() => void)[] = [];
  const order: string[] = [];
  const hold = (key: string, name: string) =>
    gate.run(
      key,
      async () => {
        order.push(name);
        await new Promise<void>((resolve) => releases.push(resolve));
        return name;
      },
      full,
    );
  const a = [hold('a', 'a1'), hold('a', 'a2'), hold('a', 'a3')];
  await assert.rejects(hold('a', 'a4'), /full/);
  const b = hold('b', 'b1');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, ['a1', 'a2', 'b1'], 'a3 waits for a slot of a');
  releases.shift()!();
  assert.equal(await a[0], 'a1');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, ['a1', 'a2', 'b1', 'a3'], 'the freed slot goes to the waiter');
  for (const release of releases.splice(0)) release();
  assert.deepEqual(await Promise.all([...a, b]), ['a1', 'a2', 'a3', 'b1']);
});

test('a failing run frees its slot, and an idle key leaves nothing behind', async () => {
  const gate = new KeyedSemaphore(1, 0);
  await assert.rejects(
    gate.run('k', () => Promise.reject(new Error('boom')), full),
    /boom/,
  );
  assert.equal(await gate.run('k', async () => 'again', full), 'again');
  assert.equal((gate as unknown as { keys: Map<string, unknown> }).keys.size, 0);
});
