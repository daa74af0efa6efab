import type { Knex } from 'knex';
import { TASK_STATUSES } from '../../lib/task-schema.ts';
import type { TaskRow, TaskStatus } from './row.ts';
import type { TaskTable } from './table.ts';

/** Stands for "now" on whichever clock the condition is checked: the database's in SQL, the caller's in memory. */
export const NOW = Symbol('now');

/**
 * One condition on a task row, written once and applied both as SQL (`toSql`) and to a row held in memory
 * (`matches`, the versioned store's claimer and fences), so the two cannot drift apart.
 */
export type Condition =
  | { column: keyof TaskRow; is: string | boolean | null }
  | { column: keyof TaskRow; in: readonly string[] }
  | { column: keyof TaskRow; notAfter: typeof NOW }
  | { column: keyof TaskRow; before: typeof NOW };

/** Which row state a change expects; the change applies only if the row is still in it. */
export interface TaskFence {
  status: TaskStatus;
  /** The claim that must still hold the task (a node that lost its lease must not write). */
  claimId?: string | null;
  /** Only while the lease has run out (the reaper). */
  leaseExpired?: boolean;
  /**
   * The cancel flag the decision was made with: an outcome decided without a cancel must not land once a
   * cancel was accepted (the API answered it 200), on whichever node.
   */
  cancelRequested?: boolean;
}

/** Pending tasks of these types, whenever they may run. */
export function pendingOf(types: readonly string[]): Condition[] {
  return [
    { column: 'status', is: 'pending' },
    { column: 'deleted_at', is: null },
    { column: 'type', in: types },
  ];
}

/** Pending tasks of these types that may run now: what a claim takes, in `CLAIM_ORDER`. */
export function claimable(types: readonly string[]): Condition[] {
  return [...pendingOf(types), { column: 'run_after', notAfter: NOW }];
}

/** Oldest `run_after` first, then id (byRunAfter in memory). */
export const CLAIM_ORDER = [{ column: 'run_after' }, { column: 'id' }];

/** The row state a fenced change requires. */
export function fenceConditions(fence: TaskFence): Condition[] {
  const out: Condition[] = [
    { column: 'status', is: fence.status },
    { column: 'deleted_at', is: null },
  ];
  if (fence.cancelRequested !== undefined) out.push({ column: 'cancel_requested', is: fence.cancelRequested });
  if (fence.claimId !== undefined) out.push({ column: 'claim_id', is: fence.claimId });
  if (fence.leaseExpired) out.push({ column: 'lease_expires_at', before: NOW });
  return out;
}

/** The fence of a write by the run that holds `claimId` (progress, artifact, outcome). */
export function heldBy(claimId: string): TaskFence {
  return { status: 'running', claimId };
}

/**
 * `status = '<status>'`, the status written into the statement's text rather than bound: SQLite uses a partial
 * index (the claim's and the reaper's, migration 012) only when the statement's own text implies the index's
 * WHERE; with a bound value it would prepare the statement again on every run. A status is one of a fixed list,
 * checked here, never a caller's text.
 */
export function whereStatus(q: Knex.QueryBuilder, status: TaskStatus): Knex.QueryBuilder {
  if (!TASK_STATUSES.includes(status)) throw new Error(`not a task status: ${String(status)}`);
  return q.whereRaw(`?? = '${status}'`, ['status']);
}

export function toSql(table: TaskTable, q: Knex.QueryBuilder, conditions: Condition[]): Knex.QueryBuilder {
  for (const c of conditions) {
    if ('is' in c) {
      if (c.is === null) q.whereNull(c.column);
      else if (c.column === 'status') whereStatus(q, c.is as TaskStatus);
      else q.where(c.column, c.is);
    } else if ('in' in c) q.whereIn(c.column, c.in);
    else if ('notAfter' in c) q.where(c.column, '<=', table.dialect.clock(table.knex));
    else q.where(c.column, '<', table.dialect.clock(table.knex));
  }
  return q;
}

/** Whether `row` meets every condition, "now" being `at` (an ISO time, compared as the stored ISO times are). */
export function matches(row: TaskRow, conditions: Condition[], at: string): boolean {
  return conditions.every((c) => {
    const v = row[c.column];
    if ('is' in c) return v === c.is;
    if ('in' in c) return c.in.includes(v as string);
    if (typeof v !== 'string') return false;
    return 'notAfter' in c ? v <= at : v < at;
  });
}
