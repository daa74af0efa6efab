import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeyedLock } from '../lib/keyed-lock.ts';

const tick = () => new Promise((r) => setTimeout(r, 1));

test('holders of one key run one at a time, in arrival order; other keys do not wait', async () => {
  const lock = new KeyedLock();
  const events: string[] = [];
  const hold = (key: string, name: string) =>
    lock.run(key, async () => {
      events.push(`${name}+`);
      await tick();
      events.push(`${name}-`);
    });
  await Promise.all([hold('a', 'a1'), hold('a', 'a2'), hold('b', 'b1')]);
  const at = (e: string) => events.indexOf(e);
  assert.ok(at('a1-') < at('a2+'), events.join(' '));
  assert.ok(at('b1+') < at('a1-'), `b does not wait for a: ${events.join(' ')}`);
});

test('overlapping key sets asked for in opposite orders do not wait on each other forever', async () => {
  const lock = new KeyedLock();
  let inside = 0;
  let most = 0;
  const hold = (keys: string[]) =>
    lock.run(keys, async () => {
      most = Math.max(most, ++inside);
      await tick();
      inside--;
    });
  await Promise.all(Array.from({ length: 20 }, (_, i) => hold(i % 2 ? ['x', 'y'] : ['y', 'x'])));
  assert.equal(most, 1);
});

test('a holder that fails lets the next one in', async () => {
  const lock = new KeyedLock();
  await assert.rejects(
    lock.run('k', async () => {
      throw new Error('boom');
    }),
    /boom/,
  );
  assert.equal(await lock.run('k', async () => 'next'), 'next');
});
