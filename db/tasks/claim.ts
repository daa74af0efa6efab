import type { Dialect } from '../dialects/index.ts';
import { CLAIM_ORDER, claimable, toSql } from './predicates.ts';
import { byRunAfter, taskFromDb, toDbPatch, type TaskPatch, type TaskRow } from './row.ts';
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

/** Takes up to `limit` claimable pending tasks of the given types, oldest first, for this worker. */
export async function claimTasks(
  table: TaskTable,
  claim: NonNullable<Dialect['claim']>,
  c: ClaimRequest,
): Promise<TaskRow[]> {
  const { knex, dialect } = table;
  const columns = toDbPatch(table, c.patch);
  const rows = await claim(knex, {
    table: table.name,
    candidates: (q) => toSql(table, q, claimable(c.types)).orderBy(CLAIM_ORDER).limit(c.limit),
    set: { ...columns, worker_id: c.workerId, claim_id: c.claimId, lease_expires_at: dialect.clock(knex, c.leaseMs) },
    mark: { status: columns.status, claim_id: c.claimId },
  });
  return rows.map(taskFromDb).sort(byRunAfter);
}
