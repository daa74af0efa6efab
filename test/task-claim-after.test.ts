import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { after, before, describe, test } from 'node:test';
import { findTask } from '../db/repositories/tasks.ts';
import { claimDecision, columnsFor, decide } from '../engine/machine.ts';
import { newTaskRow, startEngineNode, until, type EngineNode } from './support/engine-node.ts';
import { lanes } from './support/harness.ts';

const FACTS = {
  retryCount: 0,
  maxRetries: 0,
  cancelRequested: false,
  deleted: false,
  backoffBaseMs: 10,
  backoffMaxMs: 100,
  retryDelayMs: 0,
};

for (const lane of lanes()) {
  describe(`outcomes written in the claim's statement [${lane.name}]`, () => {
    let node: EngineNode;
    before(async () => {
      node = await startEngineNode(lane.database());
    });
    after(() => node.close({ drop: true }));

    test('the store applies the fenced outcomes and claims at once; a row another claim holds refuses its outcome', async (t) => {
      const store = node.db.tasks;
      if (!store.claimAfter) {
        // Both at once need data-modifying CTEs (PostgreSQL) or a single writer (SQLite, one transaction);
        // elsewhere outcomes and claims are separate statements.
        assert.ok(lane.name !== 'postgres' && lane.name !== 'sqlite');
        t.skip('no combined claim on this database');
        return;
      }
      const type = 'claim_after_store';
      const tasks = Array.from({ length: 4 }, () => newTaskRow(type));
      await store.insert(tasks, new Date());
      const now = new Date().toISOString();
      const request = (claimId: string, limit: number) => ({
        workerId: 'test-node',
        claimId,
        types: [type],
        limit,
        leaseMs: 30_000,
        patch: columnsFor(claimDecision(), { now, progress: 0, logBackend: 'database' }),
      });
      const first = randomUUID();
      const held = await store.claim(request(first, 2));
      assert.equal(held.length, 2);
      // One of the two was taken over by another node's claim meanwhile.
      const [taken] = await store.change([
        { id: held[1]!.id, fence: { status: 'running' }, patch: { claim_id: randomUUID(), worker_id: 'other' } },
      ]);
      assert.ok(taken);
      const patch = columnsFor(decide('running', FACTS, { type: 'SUCCEED' }), { now, progress: 0, result: '1' });
      const fence = { status: 'running' as const, claimId: first, cancelRequested: false };
      const second = randomUUID();
      const [applied, rows] = await store.claimAfter(
        request(second, 10),
        held.map((h) => ({ id: h.id, fence, patch: { ...patch } })),
      );
      assert.deepEqual(applied, [true, false]);
      assert.deepEqual(
        rows.map((r) => r.id).sort(),
        tasks
          .map((x) => x.id)
          .filter((id) => !held.some((h) => h.id === id))
          .sort(),
      );
      assert.ok(rows.every((r) => r.status === 'running' && r.claim_id === second));
      assert.equal((await findTask(node.db, held[0]!.id))?.status, 'success');
      const other = await findTask(node.db, held[1]!.id);
      assert.equal(other?.status, 'running');
      assert.equal(other?.worker_id, 'other');
    });

    test('a claim that fails undoes the outcome that went with it', async (t) => {
      const { claimAfter } = node.db.dialect;
      if (!claimAfter) {
        assert.ok(lane.name !== 'postgres' && lane.name !== 'sqlite');
        t.skip('no combined claim on this database');
        return;
      }
      const type = 'claim_after_undone';
      const task = newTaskRow(type);
      await node.db.tasks.insert([task], new Date());
      const { knex } = node.db;
      const table = node.db.t.tasks;
      const change = knex(table).where('id', task.id).update({ status: 'success' });
      // A column the table lacks: the claim fails after the change ran.
      const failing = {
        table,
        candidates: (q: Knex.QueryBuilder) => q.where('type', type).limit(1),
        set: { no_such_column: 1 },
        mark: {},
      };
      await assert.rejects(claimAfter(knex, failing, change));
      assert.equal((await findTask(node.db, task.id))?.status, 'pending');
    });

    test('outcomes of runs of two claims are written together, each row fenced on its own claim', async () => {
      const store = node.db.tasks;
      const type = 'two_claims';
      await store.insert(
        Array.from({ length: 4 }, () => newTaskRow(type)),
        new Date(),
      );
      const now = new Date().toISOString();
      const claim = async (claimId: string) =>
        store.claim({
          workerId: 'test-node',
          claimId,
          types: [type],
          limit: 2,
          leaseMs: 30_000,
          patch: columnsFor(claimDecision(), { now, progress: 0, logBackend: 'database' }),
        });
      const [c1, c2] = [randomUUID(), randomUUID()];
      const [one, two] = [await claim(c1), await claim(c2)];
      const patch = columnsFor(decide('running', FACTS, { type: 'SUCCEED' }), { now, progress: 0, result: '1' });
      const outcome = (id: string, claimId: string) => ({
        id,
        fence: { status: 'running' as const, claimId, cancelRequested: false },
        patch: { ...patch },
      });
      const applied = await store.change([
        outcome(one[0]!.id, c1),
        outcome(two[0]!.id, c2),
        outcome(one[1]!.id, c1),
        // Not its claim: refused, though the group names that claim for other rows.
        outcome(two[1]!.id, c1),
      ]);
      assert.deepEqual(applied, [true, true, true, false]);
      const status = async (id: string) => (await findTask(node.db, id))?.status;
      assert.deepEqual(await Promise.all([one[0]!, two[0]!, one[1]!, two[1]!].map((r) => status(r.id))), [
        'success',
        'success',
        'success',
        'running',
      ]);
    });

    test('a busy node sends its outcomes along with its next claim, and every task ends once', async () => {
      const statements: string[] = [];
      const listen = (q: { sql: string }) => void statements.push(q.sql);
      node.db.knex.on('query', listen);
      const store = node.db.tasks;
      const { claimAfter } = store;
      let along = 0;
      if (claimAfter)
        store.claimAfter = (request, changes) => {
          along++;
          return claimAfter(request, changes);
        };
      const type = 'claim_after_engine';
      const runs = new Map<string, number>();
      node.engine.register(type, async (ctx) => void runs.set(ctx.task.id, (runs.get(ctx.task.id) ?? 0) + 1));
      const ids = await node.engine.createMany(Array.from({ length: 200 }, () => ({ type })));
      assert.ok(
        await until(async () => {
          const rows = await node.db
            .knex(node.db.t.tasks)
            .whereIn('id', ids)
            .where('status', 'success')
            .count({ n: '*' });
          return Number(rows[0]!.n) === ids.length;
        }, 20_000),
      );
      node.db.knex.off('query', listen);
      store.claimAfter = claimAfter;
      assert.equal(runs.size, ids.length);
      assert.ok(
        [...runs.values()].every((n) => n === 1),
        'no task ran twice',
      );
      const combined = statements.filter((s) => /^with "changed" as \(update/.test(s)).length;
      if (lane.name === 'postgres') assert.ok(combined > 0, 'outcomes went out in the claim statement');
      else assert.equal(combined, 0);
      if (claimAfter) assert.ok(along > 0, 'outcomes went out with claims');
    });
  });
}
