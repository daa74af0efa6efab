import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { after, before, describe, test } from 'node:test';
import { findTask } from '../db/repositories/tasks.ts';
import type { TaskEngine } from '../engine/engine.ts';
import type { TaskJson, TaskStatus } from '../engine/types.ts';
import { startEngineNode, until, type EngineNode } from './support/engine-node.ts';
import { lanes } from './support/harness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(engine: TaskEngine, id: string, status: TaskStatus, ms = 5000): Promise<TaskJson> {
  let last: TaskJson | undefined;
  const ok = await until(async () => (last = await engine.get(id))?.status === status, ms);
  assert.ok(ok, `task ${id} did not reach ${status} (is ${last?.status})`);
  return last!;
}

/** A runner that waits until its signal fires (or `ms` passes) and records that it saw the abort. */
function blocking(seen: { aborted: number; started: number }, ms = 60_000) {
  return async (ctx: { signal: AbortSignal }) => {
    seen.started++;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, ms);
      ctx.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        seen.aborted++;
        reject(ctx.signal.reason);
      });
    });
  };
}

let typeCounter = 0;
const uniqueType = (name: string) => `${name}_${++typeCounter}`;

for (const lane of lanes()) {
  describe(`task engine [${lane.name}]`, () => {
    let node: EngineNode;
    let engine: TaskEngine;
    const database = lane.database();
    const files = mkdtempSync(join(tmpdir(), 'engine-test-'));
    before(async () => {
      // A long poll interval: wake-ups, not polling, must start new tasks.
      node = await startEngineNode(database, { config: { pollIntervalMs: 10_000, fileUploadPath: files } });
      engine = node.engine;
    });
    after(() => node.close({ drop: true }));

    test('a new task starts at once, reports progress and logs, and its result is stored', async () => {
      const type = uniqueType('report');
      let startedAt = 0;
      engine.register(type, async (ctx) => {
        startedAt = performance.now();
        assert.deepEqual(ctx.payload, { n: 3 });
        assert.equal(ctx.task.status, 'running');
        ctx.log.info('working', { step: 1, note: 'two words' });
        ctx.progress(40);
        await sleep(400);
        ctx.log.warn('almost done');
        return { total: 3 };
      });
      const t0 = performance.now();
      const task = await engine.create({ type, payload: { n: 3 }, creatorId: null });
      assert.equal(task?.status, 'pending');
      assert.ok(await until(() => startedAt > 0, 2000));
      assert.ok(startedAt - t0 < 500, `started ${Math.round(startedAt - t0)} ms after create (poll interval is 10 s)`);
      assert.ok(
        await until(async () => (await engine.get(task!.id))?.progress === 40, 1000),
        'progress visible while running',
      );
      const done = await waitFor(engine, task!.id, 'success');
      assert.equal(done.progress, 100);
      assert.equal(done.result, JSON.stringify({ total: 3 }));
      assert.ok(done.started_at && done.finished_at && done.finished_at >= done.started_at);
      const logs = await engine.logs(task!.id, 0, 10);
      assert.equal(logs.total, 2);
      assert.deepEqual(
        logs.rows.map((l) => [l.level, l.message]),
        [
          ['info', 'working step=1 note="two words"'],
          ['warn', 'almost done'],
        ],
      );
      assert.deepEqual(
        (await engine.logs(task!.id, 1, 10)).rows.map((l) => l.message),
        ['almost done'],
      );
    });

    test('the lines logged before a progress are stored when its change is signalled', async () => {
      const type = uniqueType('log_then_progress');
      engine.register(type, async (ctx) => {
        ctx.log.info('before the progress');
        ctx.progress(50);
        await sleep(600);
      });
      const seen: Promise<string[]>[] = [];
      const off = engine.changes.onChange((task) => {
        if (task.type === type && task.progress === 50)
          seen.push(engine.logs(task.id, 0, 10).then((logs) => logs.rows.map((l) => l.message)));
      });
      try {
        const task = await engine.create({ type, creatorId: null });
        await waitFor(engine, task!.id, 'success');
        assert.ok(seen.length > 0, 'the progress was signalled');
        assert.deepEqual(await seen[0], ['before the progress']);
      } finally {
        off();
      }
    });

    test('a run that logs without reporting progress signals its state once its lines are stored', async () => {
      const type = uniqueType('log_no_progress');
      engine.register(type, async (ctx) => {
        ctx.log.info('first line');
        await sleep(1500);
        ctx.log.info('second line');
        await sleep(1500);
      });
      const seen: Promise<string[]>[] = [];
      const off = engine.changes.onChange((task) => {
        if (task.type === type && task.status === 'running')
          seen.push(engine.logs(task.id, 0, 10).then((logs) => logs.rows.map((l) => l.message)));
      });
      try {
        const task = await engine.create({ type, creatorId: null });
        await waitFor(engine, task!.id, 'success');
        const read = await Promise.all(seen);
        assert.ok(
          read.some((lines) => lines.includes('first line') && !lines.includes('second line')),
          'the first line was signalled while the run went on',
        );
        assert.ok(
          read.some((lines) => lines.includes('second line')),
          'and the second before the run ended',
        );
        assert.ok(read.length <= 4, `at most one signal a second for its lines (${read.length})`);
      } finally {
        off();
      }
    });

    test('the file log backend answers the same shape, and a task keeps the backend it ran with', async () => {
      const type = uniqueType('filelog');
      engine.register(type, async (ctx) => {
        ctx.log.info('into a file');
        ctx.log.error('and an error');
      });
      node.settings.set('task_log_storage_backend', 'file');
      try {
        const task = await engine.create({ type });
        await waitFor(engine, task!.id, 'success');
        const content = await readFile(join(files, 'task-logs', `${task!.id}.jsonl`), 'utf8');
        assert.equal(content.trim().split('\n').length, 2, 'written to the file');
        node.settings.set('task_log_storage_backend', 'database');
        const logs = await engine.logs(task!.id, 0, 10);
        assert.equal(logs.total, 2);
        assert.deepEqual(Object.keys(logs.rows[0]!).sort(), ['created_at', 'id', 'level', 'message', 'task_id']);
        assert.deepEqual(
          logs.rows.map((l) => l.level),
          ['info', 'error'],
        );
      } finally {
        node.settings.set('task_log_storage_backend', 'database');
      }
    });

    test('an artifact is stored under the upload path with its name and type', async () => {
      const type = uniqueType('artifact');
      engine.register(type, async (ctx) => {
        await ctx.artifact('report.csv', 'a,b\n1,2\n', 'text/csv');
      });
      const task = await engine.create({ type, creatorId: null });
      const done = await waitFor(engine, task!.id, 'success');
      assert.equal(done.artifact_file_name, 'report.csv');
      const file = await engine.artifacts.find(done.artifact_file_key!);
      assert.equal(file?.content_type, 'text/csv');
      assert.equal(file?.size, 8);
      assert.equal(await text(await engine.artifacts.open(file!)), 'a,b\n1,2\n');
    });

    test('cancel stops a running runner through its signal; cancelling again is a 400', async () => {
      const type = uniqueType('cancel');
      const seen = { aborted: 0, started: 0 };
      engine.register(type, blocking(seen));
      const task = await engine.create({ type, maxRetries: 3 });
      await waitFor(engine, task!.id, 'running');
      assert.ok(await until(() => seen.started === 1));
      const cancelled = await engine.cancel(task!.id);
      assert.equal(cancelled.status, 'cancelled', 'the answer already shows the stopped task');
      assert.equal(cancelled.error, 'cancelled');
      assert.equal(cancelled.retry_count, 0, 'a cancelled run is not retried');
      assert.equal(seen.aborted, 1);
      await assert.rejects(
        engine.cancel(task!.id),
        (e: Error & { code?: string }) => e.code === 'E4001' && /cancelled/.test(e.message),
      );
    });

    /**
     * A runner that saves an artifact, then waits for `gate` ignoring its signal, then saves another and
     * returns success anyway: what a runner that finished its work before it looked at the signal does.
     */
    function stubborn(gate: Promise<void>, seen: { keys: string[]; aborted: boolean }) {
      return async (ctx: {
        signal: AbortSignal;
        artifact: (name: string, data: string, type: string) => Promise<string>;
      }) => {
        ctx.signal.addEventListener('abort', () => (seen.aborted = true));
        seen.keys.push(await ctx.artifact('first.csv', 'a\n', 'text/csv'));
        await gate;
        seen.keys.push(await ctx.artifact('late.csv', 'b\n', 'text/csv'));
        return { done: true };
      };
    }

    /** Whether an artifact's file is under the upload folder (artifacts/<month>/<key>). */
    const onDisk = (key: string) =>
      readdirSync(join(files, 'artifacts')).some((month) => existsSync(join(files, 'artifacts', month, key)));

    /** The task ended cancelled with no result and none of the runner's artifacts left (row or file). */
    async function assertCancelledWithoutArtifacts(id: string, keys: string[]) {
      const done = await waitFor(engine, id, 'cancelled');
      assert.equal(done.error, 'cancelled');
      assert.equal(done.result, null, 'the runner’s result is discarded');
      assert.equal(done.artifact_file_key, null);
      assert.equal(done.artifact_file_name, null);
      assert.equal(keys.length, 2);
      for (const key of keys) assert.equal(await engine.artifacts.find(key), undefined, `artifact ${key} removed`);
      for (const key of keys) assert.equal(onDisk(key), false, `artifact ${key} removed from disk`);
      await assert.rejects(
        engine.cancel(id),
        (e: Error & { code?: string }) => e.code === 'E4001' && /cancelled/.test(e.message),
      );
    }

    test('a cancel answered 200 ends the task cancelled even when the runner ignores it and returns success', async () => {
      const type = uniqueType('stubborn');
      let open!: () => void;
      const seen = { keys: [] as string[], aborted: false };
      engine.register(type, stubborn(new Promise<void>((r) => (open = r)), seen));
      const task = await engine.create({ type, creatorId: null });
      assert.ok(await until(() => seen.keys.length === 1), 'the first artifact is saved');
      assert.ok(onDisk(seen.keys[0]!));
      const answer = await engine.cancel(task!.id);
      assert.equal(answer.status, 'running', 'the runner has not stopped within the wait');
      assert.equal((await findTask(node.db, task!.id))?.cancel_requested, true);
      assert.ok(seen.aborted, 'the signal fired');
      open();
      await assertCancelledWithoutArtifacts(task!.id, seen.keys);
    });

    test('a cancel on one node of a task running on another that has not heard of it still ends it cancelled', async () => {
      // Node B renews too rarely to see the flag, and its change feed is closed: it is never told of the cancel.
      const other = await startEngineNode(database, {
        config: { leaseTtlMs: 120_000, leaseRenewIntervalMs: 60_000, fileUploadPath: files },
      });
      const type = uniqueType('unheard');
      try {
        let open!: () => void;
        const seen = { keys: [] as string[], aborted: false };
        other.engine.register(type, stubborn(new Promise<void>((r) => (open = r)), seen));
        const task = await engine.create({ type, creatorId: null });
        assert.ok(await until(() => seen.keys.length === 1), 'node B runs it');
        assert.ok(other.engine.isRunningHere(task!.id));
        await other.feed.close();
        assert.equal((await engine.cancel(task!.id)).status, 'running', 'answered 200 while node B still runs it');
        open();
        await assertCancelledWithoutArtifacts(task!.id, seen.keys);
        assert.equal(seen.aborted, false, 'node B decided from the refused write, not from a signal');
      } finally {
        await other.close();
      }
    });

    test('cancel of a task that already finished is a 400 naming its final status', async () => {
      const type = uniqueType('quick');
      engine.register(type, async () => 'done');
      const task = await engine.create({ type });
      await waitFor(engine, task!.id, 'success');
      await assert.rejects(
        engine.cancel(task!.id),
        (e: Error & { code?: string }) => e.code === 'E4001' && e.message === 'cannot cancel a task that is success',
      );
      assert.equal((await engine.get(task!.id))?.result, '"done"', 'the finished task is left as it was');
    });

    test('a pending task is cancelled at once; a task type nobody runs stays pending until a runner is registered', async () => {
      const type = uniqueType('nobody');
      const a = await engine.create({ type });
      const b = await engine.create({ type });
      await sleep(300);
      assert.equal((await engine.get(a!.id))?.status, 'pending');
      assert.equal((await engine.cancel(a!.id)).status, 'cancelled');
      engine.register(type, async () => 'late');
      await waitFor(engine, b!.id, 'success');
      assert.equal((await engine.get(a!.id))?.status, 'cancelled', 'a cancelled task does not run');
    });

    test('a failing task is retried automatically with backoff, then fails; a manual retry starts over', async () => {
      const type = uniqueType('flaky');
      const attempts: number[] = [];
      let succeed = false;
      engine.register(type, async () => {
        attempts.push(performance.now());
        if (!succeed) throw new Error(`boom ${attempts.length}`);
        return 'ok';
      });
      const task = await engine.create({ type, maxRetries: 2 });
      const failed = await waitFor(engine, task!.id, 'failed');
      assert.equal(attempts.length, 3, 'one run plus two retries');
      assert.equal(failed.retry_count, 2);
      assert.equal(failed.error, 'boom 3');
      // Backoff base 50 ms: the retries wait at least 50 and 100 ms.
      assert.ok(attempts[1]! - attempts[0]! >= 45, `first backoff ${attempts[1]! - attempts[0]!}`);
      assert.ok(attempts[2]! - attempts[1]! >= 95, `second backoff ${attempts[2]! - attempts[1]!}`);
      const logs = await engine.logs(task!.id, 0, 10);
      assert.deepEqual(
        logs.rows.map((l) => l.level),
        ['warn', 'warn', 'error'],
        'each retry and the failure are logged',
      );

      succeed = true;
      assert.equal((await engine.retry(task!.id)).retry_count, 0, 'a manual retry resets the count');
      const done = await waitFor(engine, task!.id, 'success');
      assert.equal(done.retry_count, 0);
      assert.equal(done.error, null);
      await assert.rejects(engine.retry(task!.id), /cannot retry a task that is success/);
    });

    test('illegal requests name the status: retry of a running task, delete of a running task', async () => {
      const type = uniqueType('busy');
      const seen = { aborted: 0, started: 0 };
      engine.register(type, blocking(seen));
      const task = await engine.create({ type });
      await waitFor(engine, task!.id, 'running');
      await assert.rejects(engine.retry(task!.id), /cannot retry a task that is running/);
      await assert.rejects(engine.remove(task!.id), /cannot delete a task that is running/);
      await engine.cancel(task!.id);
      await engine.remove(task!.id);
      assert.equal(await engine.get(task!.id), undefined, 'deleted tasks are gone from reads');
      assert.ok((await findTask(node.db, task!.id, { withDeleted: true }))?.deleted_at, 'soft: the row stays');
      await assert.rejects(engine.remove(task!.id), (e: Error & { code?: string }) => e.code === 'E4041');
    });

    test('never more tasks at once than task_max_concurrent, and a live resize takes effect', async () => {
      const type = uniqueType('pool');
      let now = 0;
      let peak = 0;
      let release: () => void = () => {};
      let gate = new Promise<void>((r) => (release = r));
      engine.register(type, async () => {
        now++;
        peak = Math.max(peak, now);
        await gate;
        await sleep(5);
        now--;
      });
      node.settings.set('task_max_concurrent', 3);
      try {
        const ids = await engine.createMany(Array.from({ length: 12 }, () => ({ type })));
        assert.ok(await until(() => now === 3));
        await sleep(200);
        assert.equal(now, 3, 'the rest wait pending');
        const running = await node.db
          .knex(node.db.t.tasks)
          .whereIn('id', ids)
          .where('status', 'running')
          .count({ n: '*' });
        assert.equal(Number((running[0] as { n: unknown }).n), 3, 'the database agrees');

        node.settings.set('task_max_concurrent', 5);
        assert.ok(await until(() => now === 5), 'resized without a restart');
        release();
        assert.ok(
          await until(
            async () => (await Promise.all(ids.map((id) => engine.get(id)))).every((t) => t?.status === 'success'),
            5000,
          ),
        );
        assert.equal(peak, 5);
        gate = new Promise<void>((r) => (release = r));
        release();
      } finally {
        node.settings.set('task_max_concurrent', 10);
      }
    });

    test('one task per fire key', async () => {
      const type = uniqueType('fired');
      const first = await engine.create({ type, fireKey: `${type}@1` });
      const second = await engine.create({ type, fireKey: `${type}@1` });
      assert.ok(first);
      assert.equal(second, undefined);
      // At once, and beside tasks without a key (the key's unique index may leave those out).
      const racing = await Promise.all([
        engine.create({ type, fireKey: `${type}@2` }),
        engine.create({ type, fireKey: `${type}@2` }),
        engine.create({ type }),
        engine.create({ type }),
      ]);
      assert.equal(racing.slice(0, 2).filter(Boolean).length, 1);
      assert.ok(racing[2] && racing[3]);
      const rows = (await node.db.knex(node.db.t.tasks).where({ type }).select('fire_key')) as { fire_key: unknown }[];
      assert.deepEqual(rows.map((r) => r.fire_key ?? null).sort(), [`${type}@1`, `${type}@2`, null, null]);
    });

    test('a run whose lease cannot be renewed is aborted before the lease it last wrote runs out', async () => {
      const other = await startEngineNode(database, {
        config: { leaseTtlMs: 2000, leaseRenewIntervalMs: 200, fileUploadPath: files },
      });
      const type = uniqueType('lapse');
      try {
        let abortedAt = 0;
        other.engine.register(
          type,
          (ctx) =>
            new Promise((_, reject) =>
              ctx.signal.addEventListener('abort', () => ((abortedAt = Date.now()), reject(ctx.signal.reason))),
            ),
        );
        const task = await other.engine.create({ type });
        await waitFor(other.engine, task!.id, 'running');
        await sleep(500);
        // Every renewal fails from now on, as while the database is down (the rows stay readable here).
        other.db.tasks.renew = () => Promise.reject(new Error('database unavailable'));
        // A renewal already under way has finished by now: the stored lease is the last one written.
        await sleep(300);
        const leaseEnd = Date.parse((await findTask(other.db, task!.id))!.lease_expires_at!);
        assert.ok(await until(() => abortedAt > 0, 4000), 'the runner was aborted');
        assert.ok(abortedAt < leaseEnd, `aborted ${abortedAt - leaseEnd} ms after the lease ran out`);
      } finally {
        await other.close();
      }
    });

    test('graceful stop hands unfinished tasks back to pending, and another node runs them', async () => {
      const other = await startEngineNode(database, { config: { shutdownTimeoutMs: 200, fileUploadPath: files } });
      const type = uniqueType('handback');
      try {
        const seen = { aborted: 0, started: 0 };
        other.engine.register(type, blocking(seen));
        const task = await other.engine.create({ type });
        await waitFor(other.engine, task!.id, 'running');
        // The row says running once claimed; the runner starts a moment later.
        assert.ok(await until(() => seen.started === 1));
        await other.engine.stop();
        assert.equal(seen.aborted, 1, 'the runner was told');
        const back = await engine.get(task!.id);
        assert.equal(back?.status, 'pending');
        assert.equal(back?.started_at, null);
        engine.register(type, async () => 'second node');
        const done = await waitFor(engine, task!.id, 'success');
        assert.equal(done.result, '"second node"');
      } finally {
        await other.close();
      }
    });
  });
}
