import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TaskJson } from '../engine/types.ts';
import { USER_EXPORT_TYPE } from '../routers/user-export/runner.ts';
import { until } from './support/engine-node.ts';
import { lanes, startConsole, type TestConsole } from './support/harness.ts';

for (const lane of lanes()) {
  describe(`user export payload [${lane.name}]`, () => {
    let t: TestConsole;
    before(async () => {
      t = await startConsole(lane);
    });
    after(() => t.close());

    const finished = async (payload: unknown): Promise<TaskJson> => {
      const { engine } = t.c.services;
      const task = (await engine.create({ type: USER_EXPORT_TYPE, payload, maxRetries: 0 }))!;
      let last: TaskJson | undefined;
      const done = await until(async () => {
        last = await engine.get(task.id);
        return last?.status === 'success' || last?.status === 'failed';
      }, 10_000);
      assert.ok(done, `task is ${last?.status}`);
      return last!;
    };

    test('a payload the start procedure would refuse fails the task, naming the field, instead of exporting everyone', async () => {
      const task = await finished({ search: 5 });
      assert.equal(task.status, 'failed');
      assert.match(String(task.error), /search/);
    });

    test('a payload without a search exports every user', async () => {
      const task = await finished(undefined);
      assert.equal(task.status, 'success');
      assert.deepEqual(JSON.parse(String(task.result)), { file_key: task.artifact_file_key, rows: 1 });
    });
  });
}
