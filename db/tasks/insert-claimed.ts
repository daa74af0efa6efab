import { claimColumns, type ClaimRequest } from './claim.ts';
import { insertTasks } from './insert.ts';
import { pendingTaskRow, type NewTaskRow, type TaskRow } from './row.ts';
import type { TaskTable } from './table.ts';

/**
 * Inserts a new task already claimed by `c` (its limit is 1), one statement instead of an insert and then a claim,
 * and answers it as a claim would. Its lease and `run_after` come from the database clock; the row answered holds
 * this node's times there, as neither is read by the run.
 */
export async function insertClaimedTask(
  table: TaskTable,
  task: NewTaskRow,
  now: Date,
  c: ClaimRequest,
): Promise<TaskRow> {
  await insertTasks(table, [task], now, table.dialect.clock(table.knex), claimColumns(table, c));
  const at = now.toISOString();
  return Object.assign(pendingTaskRow(task, at), c.patch, {
    worker_id: c.workerId,
    claim_id: c.claimId,
    lease_expires_at: new Date(now.getTime() + c.leaseMs).toISOString(),
  });
}
