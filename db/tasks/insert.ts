import { pendingTaskRow, toDbPatch, type NewTaskRow } from './row.ts';
import type { TaskTable } from './table.ts';

/** A new task's row as inserted; `runAfter` (the database clock) is one expression shared by a whole batch. */
export function insertedRow(table: TaskTable, t: NewTaskRow, now: Date, runAfter: unknown): Record<string, unknown> {
  return { ...toDbPatch(table, pendingTaskRow(t, now.toISOString())), run_after: runAfter };
}

/** `runAfter` defaults to the database clock (the time every node compares leases and backoffs on). */
export async function insertTasks(
  table: TaskTable,
  tasks: NewTaskRow[],
  now: Date,
  runAfter: unknown = table.dialect.clock(table.knex),
): Promise<void> {
  for (let i = 0; i < tasks.length; i += 500) {
    await table.knex(table.name).insert(tasks.slice(i, i + 500).map((t) => insertedRow(table, t, now, runAfter)));
  }
}
