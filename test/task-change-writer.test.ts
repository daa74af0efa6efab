import assert from 'node:assert/strict';
import { test } from 'node:test';
import { changeGroups, type TaskChange } from '../db/tasks/change.ts';
import type { TaskStore } from '../db/tasks/store.ts';
import { ChangeWriter } from '../engine/change-writer.ts';

const change = (id: string): TaskChange => ({
  id,
  fence: { status: 'running', claimId: 'claim-1', cancelRequested: false },
  patch: { status: 'success' },
});

/** A writer whose own statements are recorded (ids per statement), and a claim that takes every change along. */
function recordingWriter() {
  const written: string[][] = [];
  const store = {
    change: async (changes: TaskChange[]) => (written.push(changes.map((c) => c.id)), changes.map(() => true)),
  };
  return {
    written,
    writer: new ChangeWriter(store as unknown as TaskStore, { warn: () => {}, error: () => {} } as never),
  };
}

const claim = (changes: TaskChange[]) =>
  Promise.resolve<[boolean[], string[]]>([changes.map(() => true), changes.map((c) => c.id)]);

test('outcomes queued after a claim took the earlier ones along go with the next claim, not before it', async () => {
  const { written, writer } = recordingWriter();
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
  const { writer } = recordingWriter();
  const ended = (id: string, at: string): TaskChange => ({
    ...change(id),
    patch: { status: 'success', finished_at: at, updated_at: at },
  });
  const written = [
    writer.write(ended('a', '2026-01-01T00:00:00.001Z')),
    writer.write(ended('b', '2026-01-01T00:00:00.002Z')),
  ];
  assert.deepEqual(await writer.along(claim), ['a', 'b']);
  assert.deepEqual(await Promise.all(written), [true, true]);
});

/** A claim that answers (taking along what it was given) when `answer` is called. */
function slowClaim() {
  let answer = () => {};
  const statement = (changes: TaskChange[]) =>
    new Promise<[boolean[], string[]]>(
      (resolve) => (answer = () => resolve([changes.map(() => true), changes.map((c) => c.id)])),
    );
  return { statement, answer: () => answer() };
}

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

test('outcomes queued while a claim is under way wait for the next claim; resumed, they go out by themselves', async () => {
  const { written, writer } = recordingWriter();
  const first = slowClaim();
  const claimed = writer.along(first.statement);
  const a = writer.write(change('a'));
  await turns(3);
  assert.deepEqual(written, [], 'kept for the next claim');
  first.answer();
  await claimed;
  writer.resume();
  assert.deepEqual(await writer.along(claim), ['a'], 'the next claim takes it along');
  assert.equal(await a, true);
  writer.resume();
  const second = slowClaim();
  const again = writer.along(second.statement);
  const b = writer.write(change('b'));
  second.answer();
  await again;
  writer.resume();
  assert.equal(await b, true);
  assert.deepEqual(written, [['b']], 'no claim followed: written by itself');
});

test('a claim that cannot take the queue along does not hold it back', async () => {
  const { written, writer } = recordingWriter();
  // Two groups: runs that returned different results.
  const ended = (id: string, result: string): TaskChange => ({ ...change(id), patch: { status: 'success', result } });
  const done = [writer.write(ended('a', '1')), writer.write(ended('b', '2'))];
  const slow = slowClaim();
  const claimed = writer.along(slow.statement);
  assert.deepEqual(await Promise.all(done), [true, true], 'written while the claim is under way');
  assert.deepEqual(written, [['a', 'b']]);
  slow.answer();
  assert.deepEqual(await claimed, [], 'the claim took none');
});

test('outcomes of runs of different claims form one group', () => {
  const of = (id: string, claimId: string): TaskChange => ({ ...change(id), fence: { ...change(id).fence, claimId } });
  assert.deepEqual(changeGroups([of('a', 'c1'), of('b', 'c2'), of('c', 'c1')]), [[0, 1, 2]]);
  const released: TaskChange = { ...of('d', 'c1'), patch: { status: 'pending', claim_id: null } };
  assert.deepEqual(changeGroups([of('a', 'c1'), released]), [[0], [1]], 'a change of the claim itself stands alone');
});
