import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TaskChange } from '../db/tasks/change.ts';
import type { TaskStore } from '../db/tasks/store.ts';
import { ChangeWriter } from '../engine/change-writer.ts';

const change = (id: string): TaskChange => ({
  id,
  fence: { status: 'running', claimId: 'claim-1', cancelRequested: false },
  patch: { status: 'success' },
});

test('outcomes queued after a claim took the earlier ones along go with the next claim, not before it', async () => {
  const written: string[][] = [];
  const store = {
    change: async (changes: TaskChange[]) => (written.push(changes.map((c) => c.id)), changes.map(() => true)),
  };
  const writer = new ChangeWriter(store as unknown as TaskStore, { warn: () => {}, error: () => {} } as never);
  const claim = (changes: TaskChange[]) =>
    Promise.resolve<[boolean[], string[]]>([changes.map(() => true), changes.map((c) => c.id)]);
  const first = writer.write(change('a'));
  assert.deepEqual(await writer.along(claim), ['a']);
  assert.equal(await first, true);
  // The runs that claim launched end within this turn: the claim they wake is queued before the outcomes they write.
  const next = new Promise<string[]>((resolve) => setImmediate(() => resolve(writer.along(claim))));
  const second = writer.write(change('b'));
  assert.deepEqual(await next, ['b']);
  assert.equal(await second, true);
  await writer.drain();
  assert.deepEqual(written, []);
});

test('outcomes of runs that ended in different milliseconds go along with a claim as one UPDATE', async () => {
  const writer = new ChangeWriter({} as TaskStore, { warn: () => {}, error: () => {} } as never);
  const ended = (id: string, at: string): TaskChange => ({
    ...change(id),
    patch: { status: 'success', finished_at: at, updated_at: at },
  });
  const claim = (changes: TaskChange[]) =>
    Promise.resolve<[boolean[], string[]]>([changes.map(() => true), changes.map((c) => c.id)]);
  const written = [
    writer.write(ended('a', '2026-01-01T00:00:00.001Z')),
    writer.write(ended('b', '2026-01-01T00:00:00.002Z')),
  ];
  assert.deepEqual(await writer.along(claim), ['a', 'b']);
  assert.deepEqual(await Promise.all(written), [true, true]);
});
