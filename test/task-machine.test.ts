import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createActor } from 'xstate';
import { decide, snapshotOf, taskMachine, type TaskEvent, type TaskFacts } from '../engine/machine.ts';
import type { TaskStatus } from '../engine/types.ts';
import { BadRequestError } from '../lib/errors.ts';

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

const STATUSES: TaskStatus[] = ['pending', 'running', 'success', 'failed', 'cancelled'];
const EVENTS: TaskEvent['type'][] = ['CLAIM', 'SUCCEED', 'FAIL', 'CANCEL', 'RETRY', 'EXPIRE', 'RELEASE', 'DELETE'];

// Every (status, event) pair the machine accepts, with the status it leads to (default facts).
const LEGAL: Record<string, TaskStatus> = {
  'pending CLAIM': 'running',
  'pending CANCEL': 'cancelled',
  'pending DELETE': 'pending',
  'running SUCCEED': 'success',
  'running FAIL': 'failed',
  'running CANCEL': 'running',
  'running EXPIRE': 'pending',
  'running RELEASE': 'pending',
  'success DELETE': 'success',
  'failed RETRY': 'pending',
  'failed DELETE': 'failed',
  'cancelled RETRY': 'pending',
  'cancelled DELETE': 'cancelled',
};

describe('task machine', () => {
  for (const status of STATUSES) {
    for (const type of EVENTS) {
      const key = `${status} ${type}`;
      const target = LEGAL[key];
      test(`${key} → ${target ?? '400'}`, () => {
        if (target) {
          assert.equal(decide(status, facts(), { type }).status, target);
        } else {
          assert.throws(
            () => decide(status, facts(), { type }),
            (e: unknown) => e instanceof BadRequestError && e.code === 'E4001' && e.message.includes(status),
          );
        }
      });
    }
  }

  test('a failure with retries left goes back to pending, counting the retry and backing off exponentially', () => {
    let d = decide('running', facts({ maxRetries: 3, backoffBaseMs: 100, backoffMaxMs: 350 }), { type: 'FAIL' });
    assert.deepEqual([d.status, d.facts.retryCount, d.facts.retryDelayMs], ['pending', 1, 100]);
    d = decide('running', d.facts, { type: 'FAIL' });
    assert.deepEqual([d.status, d.facts.retryCount, d.facts.retryDelayMs], ['pending', 2, 200]);
    d = decide('running', d.facts, { type: 'FAIL' });
    assert.deepEqual(
      [d.status, d.facts.retryCount, d.facts.retryDelayMs],
      ['pending', 3, 350],
      'capped at the maximum',
    );
    d = decide('running', d.facts, { type: 'FAIL' });
    assert.equal(d.status, 'failed', 'no retries left');
    assert.equal(d.facts.retryCount, 3);
  });

  test('a manual retry resets the retry count and the cancel request', () => {
    const d = decide('failed', facts({ retryCount: 2, maxRetries: 2 }), { type: 'RETRY' });
    assert.equal(d.status, 'pending');
    assert.equal(d.facts.retryCount, 0);
    const c = decide('cancelled', facts({ cancelRequested: true }), { type: 'RETRY' });
    assert.equal(c.facts.cancelRequested, false);
  });

  test('cancel of a running task only asks; whatever the runner does after it, the task ends cancelled', () => {
    const asked = decide('running', facts({ maxRetries: 5 }), { type: 'CANCEL' });
    assert.equal(asked.status, 'running');
    assert.equal(asked.facts.cancelRequested, true);
    assert.equal(
      decide('running', asked.facts, { type: 'FAIL' }).status,
      'cancelled',
      'not retried although retries are left',
    );
    assert.equal(
      decide('running', asked.facts, { type: 'SUCCEED' }).status,
      'cancelled',
      'a runner that returns anyway does not succeed',
    );
  });

  test('a cancel requested before the lease ran out or the node shut down ends the task', () => {
    assert.equal(decide('running', facts({ cancelRequested: true }), { type: 'EXPIRE' }).status, 'cancelled');
    assert.equal(decide('running', facts({ cancelRequested: true }), { type: 'RELEASE' }).status, 'cancelled');
  });

  test('delete marks the task deleted without changing its status', () => {
    const d = decide('success', facts(), { type: 'DELETE' });
    assert.equal(d.status, 'success');
    assert.equal(d.facts.deleted, true);
  });

  test('an actor restored from a stored status runs the same transitions', () => {
    const actor = createActor(taskMachine, {
      input: facts({ maxRetries: 1 }),
      snapshot: snapshotOf('pending', facts({ maxRetries: 1 })),
    }).start();
    actor.send({ type: 'CLAIM' });
    assert.equal(actor.getSnapshot().value, 'running');
    actor.send({ type: 'FAIL' });
    assert.equal(actor.getSnapshot().value, 'pending');
    actor.send({ type: 'CLAIM' });
    actor.send({ type: 'FAIL' });
    assert.equal(actor.getSnapshot().value, 'failed');
    actor.send({ type: 'SUCCEED' });
    assert.equal(actor.getSnapshot().value, 'failed', 'an event the state does not accept changes nothing');
    actor.stop();
  });
});
