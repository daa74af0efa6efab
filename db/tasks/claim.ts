import type { Dialect } from '../dialects/index.ts';
import type { ClaimSpec } from '../dialects/dialect.ts';
import { changeStatement, groupApplied, type TaskChange } from './change.ts';
import { CLAIM_ORDER, claimable, toSql } from './predicates.ts';
import { byRunAfter, nextVersion, taskFromDb, toDbPatch, type TaskPatch, type TaskRow } from './row.ts';
import type { TaskTable } from './table.ts';

export interface ClaimRequest {
  workerId: string;
  claimId: string;
  types: string[];
  limit: number;
  leaseMs: number;
  /** The columns the machine's claim decision sets (engine/machine.ts), beyond the claim bookkeeping. */
  patch: TaskPatch;
}

/** The columns a claim sets on each row it takes: the machine's decision and the claim's bookkeeping. */
export function claimColumns(table: TaskTable, c: ClaimRequest): Record<string, unknown> {
  const { knex, dialect } = table;
  return Object.assign(toDbPatch(table, c.patch), {
    worker_id: c.workerId,
    claim_id: c.claimId,
    lease_expires_at: dialect.clock(knex, c.leaseMs),
  });
}

/** The claim statement's parts: candidates (claimable, oldest first, at most `limit`) and what they take. */
function claimSpec(table: TaskTable, c: ClaimRequest): ClaimSpec {
  const set = Object.assign(claimColumns(table, c), nextVersion(table));
  return {
    table: table.name,
    candidates: (q) => toSql(table, q, claimable(c.types)).orderBy(CLAIM_ORDER).limit(c.limit),
    set,
    mark: { status: set.status, claim_id: c.claimId },
  };
}

/** Takes up to `limit` claimable pending tasks of the given types, oldest first, for this worker. */
export async function claimTasks(
  table: TaskTable,
  claim: NonNullable<Dialect['claim']>,
  c: ClaimRequest,
): Promise<TaskRow[]> {
  return (await claim(table.knex, claimSpec(table, c))).map(taskFromDb).sort(byRunAfter);
}

/**
 * Applies `changes` (one group: one fence, one patch; see `changeGroups`) and claims, atomically
 * (`Dialect.claimAfter`); answers which changes took effect and the claimed rows.
 */
export async function claimTasksAfter(
  table: TaskTable,
  claimAfter: NonNullable<Dialect['claimAfter']>,
  c: ClaimRequest,
  changes: TaskChange[],
): Promise<[boolean[], TaskRow[]]> {
  const { knex } = table;
  const out = await claimAfter(knex, claimSpec(table, c), changeStatement(table, knex, changes));
  return [await groupApplied(table, knex, changes, out.changed), out.rows.map(taskFromDb).sort(byRunAfter)];
}
