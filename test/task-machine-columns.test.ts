import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { claimDecision, columnsFor, decide, type TaskFacts } from '../engine/machine.ts';
import { TASK_STATUSES, taskSchema, toTaskJson } from '../lib/task-schema.ts';

const facts = (over: Partial<TaskFacts> = {}): TaskFacts => ({
  retryCount: 0,
  maxRetries: 0,
  cancelRequested: false,
  deleted: false,
  backoffBaseMs: 1000,
  backoffMaxMs: 300_000,
  retryDelayMs: 0,
  ...over,
});
const now = '2026-01-02T03:04:05.000Z';

describe('the machine owns the columns each decision writes', () => {
  test('the claim is the machine’s decision, and its columns hold for any pending task', () => {
    const d = claimDecision();
    assert.deepEqual([d.from, d.status], ['pending', 'running']);
    assert.deepEqual(columnsFor(d, { now, progress: 55, logBackend: 'file' }), {
      status: 'running',
      started_at: now,
      updated_at: now,
      progress: 0,
      log_backend: 'file',
    });
  });

  test('outcomes write their status with the facts the machine decided', () => {
    const success = columnsFor(decide('running', facts(), { type: 'SUCCEED' }), { now, progress: 40, result: '1' });
    assert.equal(success.status, 'success');
    assert.equal(success.progress, 100);
    assert.equal(success.result, '1');
    assert.equal(success.finished_at, now);

    const retry = columnsFor(decide('running', facts({ maxRetries: 2 }), { type: 'FAIL' }), {
      now,
      progress: 40,
      error: 'boom',
    });
    assert.equal(retry.status, 'pending');
    assert.equal(retry.retry_count, 1);
    assert.equal(retry.run_after_ms, 1000);
    assert.equal(retry.claim_id, null);

    const cancelled = columnsFor(decide('running', facts({ cancelRequested: true }), { type: 'SUCCEED' }), {
      now,
      progress: 40,
      result: '1',
    });
    assert.deepEqual([cancelled.status, cancelled.error, cancelled.result], ['cancelled', 'cancelled', undefined]);
  });

  test('a decision that keeps the status writes its flags only', () => {
    assert.deepEqual(columnsFor(decide('running', facts(), { type: 'CANCEL' }), { now, progress: 10 }), {
      cancel_requested: true,
      updated_at: now,
    });
    assert.deepEqual(columnsFor(decide('failed', facts(), { type: 'DELETE' }), { now, progress: 10 }), {
      cancel_requested: false,
      updated_at: now,
      deleted_at: now,
    });
  });

  test('the status list and the task JSON come from the zod schema', () => {
    assert.deepEqual(taskSchema.shape.status.options, [...TASK_STATUSES]);
    const row = { ...taskSchema.parse(sample()), worker_id: 'w', claim_id: 'c', version: 3 };
    assert.deepEqual(toTaskJson(row), sample());
  });
});

function sample() {
  return {
    id: '0190f0f0-0000-7000-8000-000000000000',
    type: 't',
    status: 'running' as const,
    category: 'user' as const,
    payload: '{}',
    progress: 0,
    result: null,
    error: null,
    retry_count: 0,
    max_retries: 0,
    creator_id: null,
    cron_schedule_id: null,
    artifact_file_key: null,
    artifact_file_name: null,
    org_id: null,
    created_at: now,
    updated_at: now,
    started_at: now,
    finished_at: null,
  };
}
