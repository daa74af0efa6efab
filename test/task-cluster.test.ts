import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { TaskJson } from '../engine/types.ts';
import { startEngineNode, until, type EngineNode } from './support/engine-node.ts';
import { lanes } from './support/harness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const CHILD = fileURLToPath(new URL('./support/engine-child.ts', import.meta.url));

// Several nodes sharing one database: PostgreSQL and MariaDB (SQLite is single-node by design; so is the
// ClickHouse driver: its claims and locks hold within one process only).
for (const lane of lanes().filter((l) => l.name !== 'sqlite' && l.name !== 'clickhouse')) {
  describe(`task engine, three nodes on one database [${lane.name}]`, () => {
    const database = lane.database();
    let nodes: EngineNode[] = [];
    before(async () => {
      // One after the other: the first migrates, the others find the schema ready.
      for (let i = 0; i < 3; i++) nodes.push(await startEngineNode(database));
    });
    after(async () => {
      for (const [i, n] of nodes.entries()) await n.close({ drop: i === nodes.length - 1 });
    });

    test('2,000 tasks run exactly once, spread over the nodes', async () => {
      const runs = new Map<string, number>();
      const byNode = [0, 0, 0];
      nodes.forEach((n, i) =>
        n.engine.register('count', async (ctx) => {
          runs.set(ctx.task.id, (runs.get(ctx.task.id) ?? 0) + 1);
          byNode[i]!++;
          if (Math.random() < 0.2) await sleep(1);
        }),
      );
      const ids = [
        ...(await nodes[0]!.engine.createMany(Array.from({ length: 1000 }, () => ({ type: 'count' })))),
        ...(await nodes[1]!.engine.createMany(Array.from({ length: 1000 }, () => ({ type: 'count' })))),
      ];
      assert.ok(await until(() => runs.size === ids.length, 60_000), `${runs.size} of ${ids.length} ran`);
      const { knex, t } = nodes[0]!.db;
      assert.ok(
        await until(
          async () =>
            Number(
              (
                (await knex(t.tasks).where('type', 'count').where('status', 'success').count({ n: '*' }))[0] as {
                  n: unknown;
                }
              ).n,
            ) === ids.length,
          5000,
        ),
      );
      assert.deepEqual(
        [...runs.values()].filter((n) => n !== 1),
        [],
        'no task ran twice',
      );
      assert.ok(
        byNode.every((n) => n > 0),
        `every node took work: ${byNode.join(', ')}`,
      );
    });

    test('creates one at a time on a fourth node while three nodes claim: no error, no task lost or run twice', async () => {
      const creator = await startEngineNode(database);
      try {
        const runs = new Map<string, number>();
        for (const n of nodes)
          n.engine.register('busy_create', async (ctx) => void runs.set(ctx.task.id, (runs.get(ctx.task.id) ?? 0) + 1));
        // Four creators of 500 each, every create its own INSERT, against claims locking the same index.
        const ids = (
          await Promise.all(
            Array.from({ length: 4 }, async () => {
              const mine: string[] = [];
              for (let i = 0; i < 500; i++) mine.push((await creator.engine.create({ type: 'busy_create' }))!.id);
              return mine;
            }),
          )
        ).flat();
        assert.equal(new Set(ids).size, 2000);
        assert.ok(await until(() => runs.size === ids.length, 60_000), `${runs.size} of ${ids.length} ran`);
        assert.deepEqual(
          [...runs.values()].filter((n) => n !== 1),
          [],
          'no task ran twice',
        );
        const { knex, t } = creator.db;
        const stored = (await knex(t.tasks).where('type', 'busy_create').select('id')) as { id: string }[];
        assert.equal(stored.length, ids.length, 'one row per create');
        assert.match(
          await creator.registry.metrics(),
          /db_retries_total\{reason="deadlock"\} \d+/,
          'lost races are counted',
        );
        assert.ok(
          await until(
            async () =>
              Number(
                (
                  (await knex(t.tasks).where({ type: 'busy_create', status: 'success' }).count({ n: '*' }))[0] as {
                    n: unknown;
                  }
                ).n,
              ) === ids.length,
            5000,
          ),
        );
      } finally {
        await creator.close();
      }
    });

    test('cancel through one node stops the runner on another within about a second', async () => {
      const [a, b] = nodes;
      let abortedAt = 0;
      b!.engine.register(
        'remote_cancel',
        (ctx) =>
          new Promise((_, reject) =>
            ctx.signal.addEventListener('abort', () => ((abortedAt = performance.now()), reject(ctx.signal.reason))),
          ),
      );
      const task = await a!.engine.create({ type: 'remote_cancel' });
      assert.ok(await until(() => b!.engine.isRunningHere(task!.id), 5000), 'running on node B');
      const t0 = performance.now();
      const answer = await a!.engine.cancel(task!.id);
      assert.ok(abortedAt > 0, 'the runner on B saw its signal');
      assert.ok(abortedAt - t0 < 1500, `signal after ${Math.round(abortedAt - t0)} ms`);
      assert.equal(answer.status, 'cancelled');
    });

    test('one cron fire makes one task, whichever nodes fire it; a toggle on one node stops all', async () => {
      for (const n of nodes) {
        n.engine.register('tick', async () => {});
        n.scheduler.define({ id: 'every-second', name: 'Every second', spec: '* * * * * *', taskType: 'tick' });
        await n.scheduler.start();
      }
      await sleep(2300);
      const { knex, t } = nodes[0]!.db;
      const fired = (await knex(t.tasks)
        .where('cron_schedule_id', 'every-second')
        .select('fire_key', 'creator_id', 'category')) as {
        fire_key: string;
        creator_id: string | null;
        category: string;
      }[];
      assert.ok(fired.length >= 1 && fired.length <= 3, `${fired.length} tasks in ~2.3 s of one-second fires`);
      assert.equal(new Set(fired.map((f) => f.fire_key)).size, fired.length);
      assert.ok(fired.every((f) => f.creator_id === null && f.category === 'system'));
      assert.ok((await nodes[2]!.scheduler.get('every-second')).last_run, 'last run recorded, seen from every node');

      const off = await nodes[0]!.scheduler.toggle('every-second', false);
      assert.equal(off.enabled, false);
      assert.equal(off.next_run, null);
      await sleep(200);
      const count = async () =>
        Number(
          ((await knex(t.tasks).where('cron_schedule_id', 'every-second').count({ n: '*' }))[0] as { n: unknown }).n,
        );
      const settled = await count();
      await sleep(1200);
      assert.equal(await count(), settled, 'no node fires a disabled schedule');
      for (const n of nodes) assert.equal((await n.scheduler.get('every-second')).enabled, false);
      for (const n of nodes) await n.scheduler.stop();
    });

    test('a node killed while running tasks: they complete on the others once its lease runs out', async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
        env: { ...process.env, ENGINE_CHILD_DATABASE: JSON.stringify(database), ENGINE_CHILD_LEASE_MS: '1500' },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      try {
        const [line] = (await once(child.stdout!, 'data', { signal: AbortSignal.timeout(20_000) })) as [
          Buffer | string,
        ];
        const workerId = /^ready (\S+)/.exec(String(line))?.[1];
        assert.ok(workerId, `child said ${String(line)}`);

        const tasks = (await Promise.all(
          [1, 2, 3, 4, 5].map(() => nodes[0]!.engine.create({ type: 'crash_victim' })),
        )) as TaskJson[];
        const ids = tasks.map((x) => x.id);
        const { knex, t } = nodes[0]!.db;
        const heldByChild = async () =>
          Number(
            (
              (
                await knex(t.tasks)
                  .whereIn('id', ids)
                  .where({ status: 'running', worker_id: workerId })
                  .count({ n: '*' })
              )[0] as { n: unknown }
            ).n,
          );
        assert.ok(await until(async () => (await heldByChild()) === 5, 10_000), 'the child runs all five');

        child.kill('SIGKILL');
        await once(child, 'exit');
        const killedAt = Date.now();
        const reran = new Map<string, number>();
        for (const n of nodes.slice(0, 2))
          n.engine.register(
            'crash_victim',
            async (ctx) => void reran.set(ctx.task.id, (reran.get(ctx.task.id) ?? 0) + 1),
          );

        const done = async () =>
          (await Promise.all(ids.map((id) => nodes[0]!.engine.get(id)))).every((x) => x?.status === 'success');
        assert.ok(await until(done, 10_000), 'all five completed on the surviving nodes');
        const recoveredAfter = Date.now() - killedAt;
        assert.ok(recoveredAfter < 6000, `recovered ${recoveredAfter} ms after the kill`);
        assert.deepEqual([...reran.values()], [1, 1, 1, 1, 1], 'each ran once more, on one node');
        const rows = (await knex(t.tasks).whereIn('id', ids).select('worker_id')) as { worker_id: string }[];
        assert.ok(rows.every((r) => r.worker_id !== workerId));
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    });
  });
}
