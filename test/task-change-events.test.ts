import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { TaskEngine } from '../engine/engine.ts';
import type { TaskJson } from '../engine/types.ts';
import { startEngineNode, until, type EngineNode } from './support/engine-node.ts';
import { lanes } from './support/harness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let counter = 0;
const uniqueType = (name: string) => `${name}_ev_${++counter}`;

for (const lane of lanes()) {
  describe(`task change signal [${lane.name}]`, () => {
    let node: EngineNode;
    let engine: TaskEngine;
    /** Every signalled change of each task, as [status, progress]. */
    const seen = new Map<string, [string, number][]>();
    const of = (id: string) => seen.get(id) ?? [];
    const reaches = (id: string, status: string) => until(() => of(id).some(([s]) => s === status), 8000);

    before(async () => {
      node = await startEngineNode(lane.database());
      engine = node.engine;
      engine.changes.onChange((task: TaskJson) => {
        seen.set(task.id, [...of(task.id), [task.status, task.progress]]);
      });
      // A listener that throws is logged; the engine and the other listeners go on.
      engine.changes.onChange(() => {
        throw new Error('listener failure');
      });
    });
    after(() => node.close({ drop: true }));

    test('create, claim, progress and success each signal once', async () => {
      const type = uniqueType('ok');
      engine.register(type, async (ctx) => {
        ctx.progress(50);
        await sleep(150);
        return 'done';
      });
      const task = await engine.create({ type });
      assert.ok(await reaches(task!.id, 'success'));
      await sleep(100);
      assert.deepEqual(of(task!.id), [
        ['pending', 0],
        ['running', 0],
        ['running', 50],
        ['success', 100],
      ]);
      assert.equal((await engine.get(task!.id))?.status, 'success', 'signalled after the write was stored');
    });

    test('a failure, then a manual retry that succeeds', async () => {
      const type = uniqueType('fail');
      let attempt = 0;
      engine.register(type, async () => {
        if (++attempt === 1) throw new Error('first attempt fails');
      });
      const task = await engine.create({ type });
      assert.ok(await reaches(task!.id, 'failed'));
      await engine.retry(task!.id);
      assert.ok(await reaches(task!.id, 'success'));
      await sleep(100);
      assert.deepEqual(
        of(task!.id).map(([s]) => s),
        ['pending', 'running', 'failed', 'pending', 'running', 'success'],
      );
    });

    test('cancel of a pending task and of a running one', async () => {
      const waiting = await engine.create({ type: uniqueType('nobody_runs') });
      await engine.cancel(waiting!.id);
      assert.deepEqual(
        of(waiting!.id).map(([s]) => s),
        ['pending', 'cancelled'],
      );

      const type = uniqueType('blocks');
      engine.register(
        type,
        (ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
      );
      const running = await engine.create({ type });
      assert.ok(await reaches(running!.id, 'running'));
      await engine.cancel(running!.id);
      assert.ok(await reaches(running!.id, 'cancelled'));
      await sleep(100);
      assert.deepEqual(
        of(running!.id).map(([s]) => s),
        ['pending', 'running', 'cancelled'],
      );
    });

    test('the reaper hands back a task whose node stopped renewing it', async () => {
      const type = uniqueType('orphan');
      const task = await engine.create({ type });
      // Claimed by a node that is gone: a lease of 1 ms that nobody renews.
      const now = new Date().toISOString();
      const [claimed] = await node.db.tasks.claim({
        workerId: 'gone-node',
        claimId: randomUUID(),
        types: [type],
        limit: 1,
        leaseMs: 1,
        patch: { status: 'running', started_at: now, updated_at: now, progress: 0, log_backend: 'database' },
      });
      assert.equal(claimed?.id, task!.id);
      assert.ok(await until(() => of(task!.id).length === 2, 5000), 'the reaper signalled');
      engine.register(type, async () => 'second run');
      assert.ok(await reaches(task!.id, 'success'));
      await sleep(100);
      assert.deepEqual(
        of(task!.id).map(([s]) => s),
        ['pending', 'pending', 'running', 'success'],
      );
    });
  });
}
