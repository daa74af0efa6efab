import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Knex } from 'knex';
import type { Database } from '../db/database.ts';
import { TaskVersions } from '../db/dialects/clickhouse/task-versions.ts';
import { findTask } from '../db/repositories/tasks.ts';
import { newTaskRow, openLaneDatabase, startEngineNode, until, type EngineNode } from './support/engine-node.ts';
import { dropOwnTables, lanes, testConfig, type Lane } from './support/harness.ts';
import { installBefore } from './support/old-install.ts';

const CHILD = fileURLToPath(new URL('./support/engine-child.ts', import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const lane of lanes()) {
  test(`tasks of an installation from before task versions run after the upgrade [${lane.name}]`, async () => {
    const config = testConfig(lane);
    const id = randomUUID();
    await installBefore(config, '006_task_versions', async (old) => {
      const at = old.dialect.toDbTime(new Date());
      await old.knex(old.t.tasks).insert({
        id,
        type: 'upgraded',
        status: 'pending',
        category: 'system',
        payload: '{}',
        run_after: at,
        created_at: at,
        updated_at: at,
      });
    });
    const node = await startEngineNode(config.database!);
    try {
      node.engine.register('upgraded', async () => 'ran');
      assert.ok(await until(async () => (await node.engine.get(id))?.status === 'success'), 'the old task ran');
      assert.equal((await node.engine.get(id))?.result, '"ran"');
    } finally {
      await node.close({ drop: true });
    }
  });
}

/** Every stored version of a task, oldest first: what ClickHouse keeps besides the newest one FINAL reads. */
async function versions(db: Database, id: string): Promise<{ status: string; version: number }[]> {
  const rows = (await db.knex.raw(
    `select status, version from ${db.t.tasks} where id = ? order by version settings final = 0`,
    [id],
  )) as { status: string; version: string }[];
  return rows.map((r) => ({ status: r.status, version: Number(r.version) }));
}

/** A column of the newest stored version, read past the task store (which would store what it buffers first). */
async function stored(db: Database, id: string, column = 'status'): Promise<unknown> {
  return ((await db.knex(db.t.tasks).where('id', id).first(column)) as Record<string, unknown> | undefined)?.[column];
}

const claimOf = (types: string[], limit = 10) => ({
  workerId: 'test',
  claimId: randomUUID(),
  types,
  limit,
  leaseMs: 60_000,
  patch: { status: 'running' as const },
});

/** A row of an INSERT, as far as a hook looks at it. */
interface InsertedRow {
  id: string;
  version: unknown;
}

/**
 * Runs every INSERT through `db` by `hook(rows, insert)` (its rows' ids and versions, and the INSERT itself)
 * until the returned function is called.
 */
function hookInserts(
  db: Database,
  hook: (rows: InsertedRow[], insert: () => Promise<unknown>) => Promise<unknown>,
): () => void {
  const knex = db.knex;
  (db as { knex: unknown }).knex = new Proxy(knex, {
    apply(target, self, args) {
      const query = Reflect.apply(target, self, args) as Knex.QueryBuilder & {
        _method?: string;
        _single: { insert?: InsertedRow | InsertedRow[] };
      };
      const then = query.then.bind(query);
      query.then = ((ok: never, ko: never) => {
        if (query._method !== 'insert') return then(ok, ko);
        return hook(([] as InsertedRow[]).concat(query._single.insert ?? []), () => then()).then(ok, ko);
      }) as never;
      return query;
    },
  });
  return () => void ((db as { knex: unknown }).knex = knex);
}

/**
 * Makes the next INSERT through `db` take `after` once the server ran it: an answer that comes late (or, when
 * `after` throws, an answer lost although the rows are stored).
 */
function afterNextInsert(db: Database, after: () => Promise<void>): void {
  const restore = hookInserts(db, async (_rows, insert) => {
    restore();
    const answer = await insert();
    await after();
    return answer;
  });
}

/**
 * Runs every INSERT through `db` past `gate(rows)` first until the returned function is called: the gate may
 * make changes meanwhile, or throw to have the database refuse the rows.
 */
const gateInserts = (db: Database, gate: (rows: InsertedRow[]) => Promise<void>) =>
  hookInserts(db, async (rows, insert) => {
    await gate(rows);
    return insert();
  });

// ClickHouse: claims held in memory, every change a new row version written through a short buffer.
const lane = lanes().find((l): l is Lane => l.name === 'clickhouse');
if (lane) {
  describe('task versions on clickhouse', () => {
    let node: EngineNode;
    before(async () => {
      node = await startEngineNode(lane.database());
    });
    after(() => node.close({ drop: true }));

    test('the tasks table keeps each change as a new version, and reads return the newest', async () => {
      const [info] = (await node.db.knex.raw(
        'select engine, sorting_key from system.tables where database = currentDatabase() and name = ?',
        [node.db.t.tasks],
      )) as { engine: string; sorting_key: string }[];
      assert.deepEqual(
        { ...info, sorting_key: info!.sorting_key.replace(/^\((.*)\)$/, '$1') },
        { engine: 'ReplacingMergeTree', sorting_key: 'id' },
      );
      node.engine.register('versioned', async (ctx) => {
        ctx.progress(50);
        await sleep(150);
        return 'done';
      });
      const task = (await node.engine.create({ type: 'versioned' }))!;
      assert.ok(await until(async () => (await node.engine.get(task.id))?.status === 'success'));
      const all = await versions(node.db, task.id);
      assert.deepEqual(all[0], { status: 'pending', version: 0 });
      assert.equal(all.at(-1)!.status, 'success');
      assert.ok(
        all.some((v) => v.status === 'running'),
        JSON.stringify(all),
      );
      assert.deepEqual(
        all.map((v) => v.version),
        [...all.map((v) => v.version)].sort((a, b) => a - b),
      );
      assert.equal(new Set(all.map((v) => v.version)).size, all.length, 'every version is new');
      assert.equal((await findTask(node.db, task.id))!.version, all.at(-1)!.version);
    });

    test('a change is read back at once, and an API change is stored before it is answered', async () => {
      const task = (await node.engine.create({ type: 'never_registered' }))!;
      const cancelled = await node.engine.cancel(task.id);
      assert.equal(cancelled.status, 'cancelled');
      assert.equal(await stored(node.db, task.id), 'cancelled');
      const retried = await node.engine.retry(task.id);
      assert.equal(retried.status, 'pending');
      assert.equal(await stored(node.db, task.id), 'pending');
      await node.engine.remove(task.id);
      assert.equal(await node.engine.get(task.id), undefined);
      assert.ok(
        ((await node.db.knex(node.db.t.tasks).where('id', task.id).first('deleted_at')) as { deleted_at: unknown })
          .deleted_at,
      );

      // A run's outcome is buffered; any read through the store sees it.
      const other = (await node.engine.create({ type: 'never_registered' }))!;
      const [mine] = await node.db.tasks.claim({
        workerId: 'test',
        claimId: 'c1',
        types: ['never_registered'],
        limit: 1,
        leaseMs: 60_000,
        patch: { status: 'running' },
      });
      assert.equal(mine?.id, other.id, 'the deleted task is not claimed; the new one is');
      assert.deepEqual(
        await node.db.tasks.change([
          { id: other.id, fence: { status: 'running', claimId: 'c1' }, patch: { status: 'success', progress: 100 } },
        ]),
        [true],
      );
      assert.deepEqual(
        await node.db.tasks.change([
          { id: other.id, fence: { status: 'running', claimId: 'c1' }, patch: { status: 'failed' } },
        ]),
        [false],
        'fenced on the newest version',
      );
      assert.equal((await findTask(node.db, other.id))!.status, 'success');
    });

    test('50 concurrent claims take each task once', async () => {
      const ids = await node.engine.createMany(Array.from({ length: 60 }, () => ({ type: 'claimed_once' })));
      const claims = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          node.db.tasks.claim({
            workerId: 'test',
            claimId: `k${i}`,
            types: ['claimed_once'],
            limit: 2,
            leaseMs: 60_000,
            patch: { status: 'running' },
          }),
        ),
      );
      const taken = claims.flat().map((r) => r.id);
      assert.equal(taken.length, new Set(taken).size, 'no task taken twice');
      assert.equal(taken.length, 60);
      assert.deepEqual(new Set(taken), new Set(ids));
    });

    test('a task whose insert is answered late is claimed once', async () => {
      const task = newTaskRow('late_answer');
      afterNextInsert(node.db, async () => void (await sleep(400)));
      const inserting = node.db.tasks.insert([task], new Date());
      await sleep(150);
      const first = await node.db.tasks.claim(claimOf(['late_answer']));
      await inserting;
      const second = await node.db.tasks.claim(claimOf(['late_answer']));
      assert.deepEqual(
        [...first, ...second].map((r) => r.id),
        [task.id],
      );
      await node.db.tasks.settle();
      const all = await versions(node.db, task.id);
      assert.equal(new Set(all.map((v) => v.version)).size, all.length, JSON.stringify(all));
    });

    test('a task created while a claim reads, or stored by an insert that failed, is still claimed', async () => {
      const during = newTaskRow('hidden');
      const select = Object.getOwnPropertyDescriptor(TaskVersions.prototype, 'select')!.value as (
        ...args: unknown[]
      ) => Promise<unknown>;
      const proto = TaskVersions.prototype as unknown as { select: typeof select };
      proto.select = async function (this: unknown, ...args: unknown[]) {
        proto.select = select;
        const rows = await select.apply(this, args);
        await node.db.tasks.insert([during], new Date());
        return rows;
      };
      try {
        assert.deepEqual(await node.db.tasks.claim(claimOf(['hidden'])), []);
      } finally {
        proto.select = select;
      }
      const lost = newTaskRow('hidden');
      afterNextInsert(node.db, async () => {
        throw new Error('the answer was lost');
      });
      await assert.rejects(node.db.tasks.insert([lost], new Date()));
      const taken: string[] = [];
      assert.ok(
        await until(
          async () => (
            taken.push(...(await node.db.tasks.claim(claimOf(['hidden'])).then((rows) => rows.map((r) => r.id)))),
            taken.length === 2
          ),
        ),
      );
      assert.deepEqual(new Set(taken), new Set([during.id, lost.id]));
    });

    test('tasks waiting out a backoff do not hold back new ones', async () => {
      const waiting = await node.db.tasks.claim(claimOf(['backoff'], 1));
      assert.equal(waiting.length, 0);
      await node.db.tasks.insert(
        Array.from({ length: 150 }, () => newTaskRow('backoff')),
        new Date(),
      );
      const running = await node.db.tasks.claim(claimOf(['backoff'], 150));
      assert.equal(running.length, 150);
      await node.db.tasks.change(
        running.map((r) => ({
          id: r.id,
          fence: { status: 'running' as const, claimId: r.claim_id },
          patch: { status: 'pending' as const, run_after_ms: 60_000, claim_id: null, worker_id: null },
        })),
      );
      await node.db.tasks.settle();
      const fresh = Array.from({ length: 12 }, () => newTaskRow('backoff'));
      await node.db.tasks.insert(fresh, new Date());
      const taken = [
        ...(await node.db.tasks.claim(claimOf(['backoff']))),
        ...(await node.db.tasks.claim(claimOf(['backoff']))),
      ];
      assert.deepEqual(new Set(taken.map((r) => r.id)), new Set(fresh.map((r) => r.id)));
    });

    test('a change made while a store is under way is stored too, with no later change or read', async () => {
      const [a, b] = [newTaskRow('store_under_way'), newTaskRow('store_under_way')];
      await node.db.tasks.insert([a, b], new Date());
      await node.db.tasks.settle();
      await node.db.tasks.change([{ id: a.id, fence: { status: 'pending' }, patch: { status: 'cancelled' } }]);
      afterNextInsert(node.db, async () => void (await sleep(300)));
      // The store a settle starts takes `a`; `b` changes while it runs, and the buffer's timer fires meanwhile.
      const settling = node.db.tasks.settle();
      await sleep(10);
      await node.db.tasks.change([{ id: b.id, fence: { status: 'pending' }, patch: { status: 'cancelled' } }]);
      await settling;
      assert.equal(await stored(node.db, a.id), 'cancelled');
      assert.ok(
        await until(async () => (await stored(node.db, b.id)) === 'cancelled', 2000),
        'the later change was stored',
      );
    });

    test('a store that succeeds after a failed one lets claims go on at once', async () => {
      const task = newTaskRow('after_failure');
      await node.db.tasks.insert([task], new Date());
      await node.db.tasks.settle();
      let failed!: () => void;
      const failure = new Promise<void>((resolve) => (failed = resolve));
      afterNextInsert(node.db, async () => {
        failed();
        throw new Error('the answer was lost');
      });
      await node.db.tasks.change([{ id: task.id, fence: { status: 'pending' }, patch: { progress: 5 } }]);
      await failure;
      await sleep(5);
      await assert.rejects(node.db.tasks.claim(claimOf(['after_failure'])), /not being stored/);
      // Stored by a read's settle, well before the retry the failure armed.
      await node.db.tasks.settle();
      assert.deepEqual(
        (await node.db.tasks.claim(claimOf(['after_failure']))).map((r) => r.id),
        [task.id],
      );
    });

    test('a change the database refuses is dropped after three failed stores, the rest and later changes are stored', async () => {
      const [x, y] = [newTaskRow('refused'), newTaskRow('refused')];
      await node.db.tasks.insert([x, y], new Date());
      await node.db.tasks.settle();
      let refusing = true;
      let changedMeanwhile = false;
      const written: number[] = [];
      const restore = gateInserts(node.db, async (rows) => {
        const ids = rows.map((r) => r.id);
        if (refusing && ids.includes(x.id)) throw new Error('refused');
        // Written one at a time now, x already refused: its next version is made before the refusal is handled.
        if (refusing && ids.length === 1 && ids[0] === y.id) {
          refusing = false;
          changedMeanwhile = (
            await node.db.tasks.change([{ id: x.id, fence: { status: 'pending' }, patch: { progress: 9 } }])
          )[0]!;
        }
        for (const row of rows) if (row.id === x.id) written.push(Number(row.version));
      });
      try {
        await node.db.tasks.change([
          { id: x.id, fence: { status: 'pending' }, patch: { progress: 5 } },
          { id: y.id, fence: { status: 'pending' }, patch: { progress: 7 } },
        ]);
        assert.ok(
          await until(async () => Number(await stored(node.db, y.id, 'progress')) === 7, 10_000),
          'y was stored',
        );
        assert.ok(changedMeanwhile, 'x changed again while the rows were written one at a time');
        assert.ok(
          await until(async () => Number(await stored(node.db, x.id, 'progress')) === 9, 2000),
          "x's later version was stored",
        );
        // Seen at the INSERT rather than read back: ClickHouse merges superseded versions away when it likes.
        assert.deepEqual(written, [2], 'of x, only the version after the refused one was written');
        const claimed = await node.db.tasks.claim(claimOf(['refused']));
        assert.deepEqual(new Set(claimed.map((r) => r.id)), new Set([x.id, y.id]), 'claims go on');
      } finally {
        restore();
      }
    });

    test('stopping stores every buffered change before it resolves', async () => {
      const other = await startEngineNode(lane.database(), { start: true });
      let ran = 0;
      other.engine.register('stop_buffered', async () => void ran++);
      try {
        const ids = await other.engine.createMany(Array.from({ length: 40 }, () => ({ type: 'stop_buffered' })));
        assert.ok(await until(() => ran === 40));
        await other.engine.stop();
        const rows = (await other.db.knex(other.db.t.tasks).whereIn('id', ids).select('status')) as {
          status: string;
        }[];
        assert.deepEqual(new Set(rows.map((r) => r.status)), new Set(['success']));
      } finally {
        await other.close({ drop: true });
      }
    });
  });

  test('a process killed while running tasks: a new one runs them again at once, not when their lease ends', async () => {
    const database = lane.database();
    const db = await openLaneDatabase(database);
    const ids = Array.from({ length: 3 }, () => randomUUID());
    await db.tasks.insert(
      ids.map((id) => ({ ...newTaskRow('crash_victim'), id })),
      new Date(),
    );
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
      env: { ...process.env, ENGINE_CHILD_DATABASE: JSON.stringify(database), ENGINE_CHILD_LEASE_MS: '600000' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let node: EngineNode | undefined;
    try {
      const [line] = (await once(child.stdout!, 'data', { signal: AbortSignal.timeout(20_000) })) as [Buffer | string];
      assert.match(String(line), /^ready /);
      assert.ok(
        await until(
          async () => (await Promise.all(ids.map((id) => stored(db, id)))).every((s) => s === 'running'),
          10_000,
        ),
        'the child runs all three',
      );
      child.kill('SIGKILL');
      await once(child, 'exit');
      await db.close();

      const killedAt = Date.now();
      node = await startEngineNode(database, { config: { leaseTtlMs: 600_000 } });
      const reran = new Map<string, number>();
      node.engine.register(
        'crash_victim',
        async (ctx) => void reran.set(ctx.task.id, (reran.get(ctx.task.id) ?? 0) + 1),
      );
      const done = async () =>
        (await Promise.all(ids.map((id) => node!.engine.get(id)))).every((x) => x?.status === 'success');
      assert.ok(await until(done, 10_000), 'all three completed in the new process');
      assert.ok(Date.now() - killedAt < 10_000);
      assert.deepEqual([...reran.values()], [1, 1, 1]);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      if (node) await node.close({ drop: true });
      else await dropOwnTables({ db }).catch(() => {});
    }
  });
}
