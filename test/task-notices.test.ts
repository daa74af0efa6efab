import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startEngineNode, until, type EngineNode } from './support/engine-node.ts';
import { lanes } from './support/harness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const uniqueType = (name: string) => `${name}_notice_${Date.now()}`;

/** Counts the claim statements a node sends (with or without outcomes along). */
function countClaims(node: EngineNode): { count: number } {
  const counter = { count: 0 };
  const store = node.db.tasks;
  const claim = store.claim.bind(store);
  store.claim = (request) => (counter.count++, claim(request));
  const claimAfter = store.claimAfter?.bind(store);
  if (claimAfter) store.claimAfter = (request, changes) => (counter.count++, claimAfter(request, changes));
  return counter;
}

// Two nodes on one database (SQLite and the ClickHouse driver are single-node). The engine's own polling is
// slowed to 10 s, so only the change feed's notices wake a node.
for (const lane of lanes().filter((l) => l.name !== 'sqlite' && l.name !== 'clickhouse')) {
  describe(`new-work notices between nodes [${lane.name}]`, () => {
    const database = lane.database();
    let a: EngineNode;
    let b: EngineNode;
    before(async () => {
      a = await startEngineNode(database, { config: { pollIntervalMs: 10_000 } });
      b = await startEngineNode(database, { config: { pollIntervalMs: 10_000 } });
    });
    after(async () => {
      await a.close();
      await b.close({ drop: true });
    });

    test("another node's notice wakes a node", async () => {
      const type = uniqueType('elsewhere');
      let ran = false;
      a.engine.register(type, async () => {
        ran = true;
      });
      await b.engine.create({ type });
      assert.ok(await until(() => ran, 3000), 'the node that runs the type heard of the task');
    });

    test('a node is not woken again by its own notice', async (t) => {
      // Pushed notices (PostgreSQL NOTIFY) come back to their sender too; polled ones are read from a version table.
      if (!a.db.dialect.listen) return t.skip('the feed is polled: a node sees its own version change');
      const type = uniqueType('own');
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let started = false;
      a.engine.register(type, async () => {
        started = true;
        await gate;
      });
      const claims = countClaims(a);
      await a.engine.create({ type });
      assert.ok(await until(() => started, 3000));
      const afterStart = claims.count;
      // The notice goes out 20 ms after the create; its echo would arrive well within this.
      await sleep(400);
      const meanwhile = claims.count - afterStart;
      release();
      assert.equal(meanwhile, 0, 'no claim while the run held its slot and nothing was created');
    });
  });
}
