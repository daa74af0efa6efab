import { insertByKnex } from '../dialects/insert-rows.ts';
import type { NewTaskRow } from './row.ts';
import type { TaskTable } from './table.ts';

/**
 * A new task's row as inserted: the columns a new task does not leave null (the others default to null), its
 * times already in the database's form, so a batch of a thousand converts them once.
 */
export function insertedRow(t: NewTaskRow, createdAt: unknown, runAfter: unknown): Record<string, unknown> {
  // Every column named (no spread of `t`): a bulk create builds a thousand of these per call.
  return {
    id: t.id,
    type: t.type,
    category: t.category,
    payload: t.payload,
    max_retries: t.max_retries,
    creator_id: t.creator_id,
    cron_schedule_id: t.cron_schedule_id,
    fire_key: t.fire_key,
    org_id: t.org_id,
    status: 'pending',
    progress: 0,
    retry_count: 0,
    cancel_requested: false,
    version: 0,
    created_at: createdAt,
    updated_at: createdAt,
    run_after: runAfter,
  };
}

/**
 * `runAfter` defaults to the database clock (the time every node compares leases and backoffs on); `columns`, when
 * given, are set on every row over the new task's (a task inserted already claimed).
 */
export async function insertTasks(
  table: TaskTable,
  tasks: NewTaskRow[],
  now: Date,
  runAfter: unknown = table.dialect.clock(table.knex),
  columns?: Record<string, unknown>,
): Promise<void> {
  const createdAt = table.dialect.toDbTime(now);
  const row = columns
    ? (t: NewTaskRow) => Object.assign(insertedRow(t, createdAt, runAfter), columns)
    : (t: NewTaskRow) => insertedRow(t, createdAt, runAfter);
  const insertRows = table.dialect.insertRows ?? insertByKnex;
  await insertRows(table.knex, table.name, tasks.map(row));
}
