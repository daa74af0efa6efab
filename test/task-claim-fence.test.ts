import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { findTask } from '../db/repositories/tasks.ts';
import { startEngineNode, until, type EngineNode } from './support/engine-node.ts';
import { lanes } from './support/harness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every file under `dir`, at any depth. */
function filesUnder(dir: string): string[] {
  try {
    return readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath, e.name));
  } catch {
    return [];
  }
}

for (const lane of lanes()) {
  for (const backend of ['database', 'file']) {
    describe(`a run that lost its claim writes nothing more [${lane.name}, ${backend} logs]`, () => {
      let node: EngineNode;
      const files = mkdtempSync(join(tmpdir(), 'claim-fence-'));
      before(async () => {
        node = await startEngineNode(lane.database(), {
          settings: { task_log_storage_backend: backend },
          config: { fileUploadPath: files },
        });
      });
      after(() => node.close({ drop: true }));

      test('its artifact, progress, log lines and outcome are refused', async () => {
        const type = `fenced_${backend}`;
        let release!: () => void;
        const released = new Promise<void>((r) => (release = r));
        let artifactError: unknown;
        node.engine.register(type, async (ctx) => {
          ctx.log.info('before the claim was lost');
          await released;
          ctx.log.info('after the claim was lost');
          ctx.progress(70);
          artifactError = await ctx.artifact('late.csv', 'a,b\n', 'text/csv').then(
            () => undefined,
            (e: unknown) => e,
          );
          return 'late';
        });
        const task = await node.engine.create({ type });
        assert.ok(await until(() => node.engine.isRunningHere(task!.id)));
        await sleep(300);
        // Another node took the task over (its lease ran out unnoticed): the claim on the row is not this run's.
        const [taken] = await node.db.tasks.change([
          { id: task!.id, fence: { status: 'running' }, patch: { claim_id: randomUUID(), worker_id: 'other-node' } },
        ]);
        assert.ok(taken);
        const filesBefore = filesUnder(join(files, 'artifacts')).length;
        release();
        assert.ok(await until(() => !node.engine.isRunningHere(task!.id)));
        await sleep(500);
        assert.ok(artifactError instanceof Error, 'ctx.artifact refused');
        const row = await findTask(node.db, task!.id);
        assert.equal(row?.status, 'running', 'the outcome was not written over the other claim');
        assert.equal(row?.worker_id, 'other-node');
        assert.equal(row?.artifact_file_key, null);
        assert.equal(row?.progress, 0);
        assert.equal(filesUnder(join(files, 'artifacts')).length, filesBefore, 'the stored file was removed');
        const logs = await node.engine.logs(task!.id, 0, 10);
        assert.deepEqual(
          logs.rows.map((l) => l.message),
          ['before the claim was lost'],
        );
      });
    });
  }
}
