import { assign, setup, transition, type SnapshotFrom } from 'xstate';
import type { TaskPatch } from '../db/tasks/row.ts';
import { BadRequestError } from '../lib/errors.ts';
import type { TaskStatus } from '../lib/task-schema.ts';

/**
 * The task lifecycle (docs/engine.md), the one place where transitions are decided; the database row mirrors it.
 *
 *   pending ──CLAIM──▶ running ──SUCCEED──▶ success, or cancelled when a cancel was requested
 *      │                 │ ──FAIL──▶ failed, or pending again while retries are left (after a backoff),
 *      │                 │           or cancelled when a cancel was requested
 *      │                 │ ──EXPIRE / RELEASE──▶ pending (lease ran out after a crash; handed back at shutdown),
 *      │                 │                        or cancelled when a cancel was requested
 *      └──CANCEL──▶ cancelled ◀─┘ (CANCEL on running only asks the runner to stop)
 *   failed | cancelled ──RETRY──▶ pending (retry count reset)
 *   DELETE is allowed in every state but running.
 *
 * `columnsFor` turns a decision into the columns its write stores: nothing writes a status this module did not
 * decide, the claim included (its statement sets `columnsFor(claimDecision(...))` on every row it takes).
 */

export interface TaskFacts {
  retryCount: number;
  maxRetries: number;
  cancelRequested: boolean;
  deleted: boolean;
  /** Exponential backoff of automatic retries: base · 2^(retries so far), at most max. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Set by an automatic retry: how long the task waits before it may run again. */
  retryDelayMs: number;
}

export type TaskEvent =
  | { type: 'CLAIM' }
  | { type: 'SUCCEED' }
  | { type: 'FAIL' }
  | { type: 'CANCEL' }
  | { type: 'RETRY' }
  | { type: 'EXPIRE' }
  | { type: 'RELEASE' }
  | { type: 'DELETE' };

export const taskMachine = setup({
  types: { context: {} as TaskFacts, events: {} as TaskEvent, input: {} as TaskFacts },
  guards: {
    cancelWasRequested: ({ context }) => context.cancelRequested,
    retriesLeft: ({ context }) => context.retryCount < context.maxRetries,
  },
  actions: {
    requestCancel: assign({ cancelRequested: true }),
    startRun: assign({ retryDelayMs: 0 }),
    scheduleRetry: assign(({ context }) => ({
      retryCount: context.retryCount + 1,
      retryDelayMs: Math.min(context.backoffMaxMs, context.backoffBaseMs * 2 ** context.retryCount),
    })),
    resetForRetry: assign({ retryCount: 0, cancelRequested: false, retryDelayMs: 0 }),
    markDeleted: assign({ deleted: true }),
  },
}).createMachine({
  id: 'task',
  context: ({ input }) => input,
  initial: 'pending',
  states: {
    pending: {
      on: {
        CLAIM: { target: 'running', actions: 'startRun' },
        CANCEL: { target: 'cancelled', actions: 'requestCancel' },
        DELETE: { actions: 'markDeleted' },
      },
    },
    running: {
      on: {
        // Once a cancel is accepted (answered 200) the task ends cancelled, whatever its runner does afterwards.
        SUCCEED: [{ guard: 'cancelWasRequested', target: 'cancelled' }, { target: 'success' }],
        FAIL: [
          { guard: 'cancelWasRequested', target: 'cancelled' },
          { guard: 'retriesLeft', target: 'pending', actions: 'scheduleRetry' },
          { target: 'failed' },
        ],
        CANCEL: { actions: 'requestCancel' },
        // A cancel asked for while the node died, or while it shut down, still ends the task.
        EXPIRE: [{ guard: 'cancelWasRequested', target: 'cancelled' }, { target: 'pending' }],
        RELEASE: [{ guard: 'cancelWasRequested', target: 'cancelled' }, { target: 'pending' }],
      },
    },
    success: { on: { DELETE: { actions: 'markDeleted' } } },
    failed: { on: { RETRY: { target: 'pending', actions: 'resetForRetry' }, DELETE: { actions: 'markDeleted' } } },
    cancelled: { on: { RETRY: { target: 'pending', actions: 'resetForRetry' }, DELETE: { actions: 'markDeleted' } } },
  },
});

export type TaskSnapshot = SnapshotFrom<typeof taskMachine>;

const ACTION_NAMES: Record<TaskEvent['type'], string> = {
  CLAIM: 'claim',
  SUCCEED: 'complete',
  FAIL: 'fail',
  CANCEL: 'cancel',
  RETRY: 'retry',
  EXPIRE: 'expire',
  RELEASE: 'release',
  DELETE: 'delete',
};

/** The machine's state for a stored task. */
export function snapshotOf(status: TaskStatus, facts: TaskFacts): TaskSnapshot {
  return taskMachine.resolveState({ value: status, context: facts });
}

export interface Decision {
  from: TaskStatus;
  status: TaskStatus;
  facts: TaskFacts;
}

/**
 * Decisions already taken, by state, facts and event: the machine is pure, and a busy node asks it the same few
 * questions (a no-op run's SUCCEED) thousands of times a second, each a snapshot and a transition otherwise.
 * Frozen, since callers share them.
 */
const decided = new Map<string, Decision>();

/** What `event` does to a task in `status`; an event the state does not accept → 400 E4001 naming the status. */
export function decide(status: TaskStatus, facts: TaskFacts, event: TaskEvent): Decision {
  const f = facts;
  const key = `${status} ${event.type} ${f.retryCount} ${f.maxRetries} ${f.cancelRequested} ${f.deleted} ${f.backoffBaseMs} ${f.backoffMaxMs} ${f.retryDelayMs}`;
  const known = decided.get(key);
  if (known) return known;
  const snapshot = snapshotOf(status, facts);
  if (!snapshot.can(event))
    throw new BadRequestError('task.illegal_transition', { action: ACTION_NAMES[event.type], status });
  const [next] = transition(taskMachine, snapshot, event);
  const d = Object.freeze({ from: status, status: next.value as TaskStatus, facts: Object.freeze(next.context) });
  if (decided.size >= 1000) decided.clear();
  decided.set(key, d);
  return d;
}

/** What a decision's write stores besides the machine's facts: the time, and what the run reported. */
export interface WriteFacts {
  now: string;
  progress: number;
  result?: string | null;
  error?: string | null;
  /** The log backend a claimed run writes to (the setting when it was claimed). */
  logBackend?: string;
}

const CANCELLED = 'cancelled';

/** The stored columns a decision sets (the one mapping from machine state to row). */
export function columnsFor(d: Decision, o: WriteFacts): TaskPatch {
  if (d.status === d.from) {
    // CANCEL of a running task and DELETE change flags only; the status stays.
    const flags: TaskPatch = { cancel_requested: d.facts.cancelRequested, updated_at: o.now };
    if (d.facts.deleted) flags.deleted_at = o.now;
    return flags;
  }
  // Literals rather than spreads of common parts: a busy node builds one per finished run.
  const { cancelRequested: cancel_requested, retryCount: retry_count } = d.facts;
  const now = o.now;
  switch (d.status) {
    case 'running':
      // A claim takes many rows in one statement: it sets no per-row facts (the rows keep theirs).
      return { status: 'running', started_at: now, updated_at: now, progress: 0, log_backend: o.logBackend };
    case 'success':
    case 'failed':
    case 'cancelled': {
      const ended: TaskPatch = {
        updated_at: now,
        cancel_requested,
        retry_count,
        finished_at: now,
        lease_expires_at: null,
        status: d.status,
        progress: d.status === 'success' ? 100 : o.progress,
        error: d.status === 'success' ? null : d.status === 'failed' ? (o.error ?? null) : CANCELLED,
      };
      // Failed and cancelled runs keep whatever result is stored; success stores its own.
      if (d.status === 'success') ended.result = o.result ?? null;
      return ended;
    }
    case 'pending':
      return {
        updated_at: now,
        cancel_requested,
        retry_count,
        status: 'pending',
        progress: 0,
        result: null,
        error: o.error ?? null,
        started_at: null,
        finished_at: null,
        worker_id: null,
        claim_id: null,
        lease_expires_at: null,
        run_after_ms: d.facts.retryDelayMs,
      };
  }
}

/** Facts of no task in particular: CLAIM depends on none of them. */
const ANY_PENDING: TaskFacts = {
  retryCount: 0,
  maxRetries: 0,
  cancelRequested: false,
  deleted: false,
  backoffBaseMs: 0,
  backoffMaxMs: 0,
  retryDelayMs: 0,
};

/**
 * The claim, decided by the machine for any pending task: CLAIM is unconditional on pending and its columns
 * carry no per-task facts, so one decision holds for every row the claim statement takes (its filter is
 * "pending").
 */
export function claimDecision(): Decision {
  return decide('pending', ANY_PENDING, { type: 'CLAIM' });
}
