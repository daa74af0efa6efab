import { fenceConditions, heldBy, toSql } from './predicates.ts';
import { updateColumns, type TaskPatch } from './row.ts';
import type { TaskTable } from './table.ts';

/**
 * Columns of a running task written by the run that holds it (progress, artifact), fenced on its claim like
 * its outcome; answers whether the run still held the task.
 */
export async function setRunningColumns(
  table: TaskTable,
  id: string,
  claimId: string,
  patch: TaskPatch,
): Promise<boolean> {
  const q = toSql(table, table.knex(table.name).where('id', id), fenceConditions(heldBy(claimId)));
  return (await q.update(updateColumns(table, patch))) > 0;
}
