import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WriteLoop } from '../db/dialects/clickhouse/write-loop.ts';
import { sleep } from './support/identity.ts';

/** A loop whose writes are counted and end when the test says, each failing while `failing` is set. */
function loop() {
  const ends: { ok: () => void; ko: (e: Error) => void }[] = [];
  const failures: unknown[] = [];
  const l = new WriteLoop(
    () => new Promise<void>((ok, ko) => ends.push({ ok, ko })),
    (error) => failures.push(error),
  );
  return { l, ends, failures };
}

test('changes made together share one write, about 50 ms after the first', async () => {
  const { l, ends } = loop();
  l.changed();
  l.changed();
  l.changed();
  assert.equal(ends.length, 0, 'nothing written at once');
  await sleep(200);
  assert.equal(ends.length, 1);
  ends[0]!.ok();
  await sleep(200);
  assert.equal(ends.length, 1, 'no write without a change');
});

test('a settle waits for the changes made before it, joining the write under way', async () => {
  const { l, ends } = loop();
  l.changed();
  let settled = false;
  const settling = l.settle().then(() => (settled = true));
  await sleep(5);
  assert.equal(ends.length, 1, 'the settle started a write');
  // A later change is not the settle's to wait for; the write under way is joined, not doubled.
  l.changed();
  ends[0]!.ok();
  await settling;
  assert.ok(settled);
  assert.equal(ends.length, 1);
  await sleep(200);
  assert.equal(ends.length, 2, 'the later change got a write of its own');
  ends[1]!.ok();
});

test('a failed write is tried again with a growing backoff, and counted until one succeeds', async () => {
  const { l, ends, failures } = loop();
  l.changed();
  await sleep(100);
  ends[0]!.ko(new Error('down'));
  await sleep(5);
  assert.equal(l.failures, 1);
  assert.equal(failures.length, 1, 'the failure was reported');
  await sleep(200);
  assert.equal(ends.length, 2, 'tried again after 100 ms');
  ends[1]!.ko(new Error('down'));
  await sleep(5);
  assert.equal(l.failures, 2);
  await sleep(100);
  assert.equal(ends.length, 2, 'the second retry waits 200 ms');
  await sleep(300);
  assert.equal(ends.length, 3);
  ends[2]!.ok();
  await sleep(5);
  assert.equal(l.failures, 0);
});

test('a write begun before a reset neither arms another write nor counts a failure', async () => {
  for (const ending of ['ok', 'ko'] as const) {
    const { l, ends, failures } = loop();
    l.changed();
    const settling = l.settle().catch(() => {});
    await sleep(5);
    // A change while the write runs, then the store drops everything it held.
    l.changed();
    l.reset();
    if (ending === 'ok') ends[0]!.ok();
    else ends[0]!.ko(new Error('down'));
    await settling;
    await sleep(300);
    assert.equal(ends.length, 1, `nothing written after the reset (write ended ${ending})`);
    assert.equal(l.failures, 0);
    assert.equal(failures.length, 0);
    await l.settle();
    assert.equal(ends.length, 1, 'nothing left to settle');
  }
});
