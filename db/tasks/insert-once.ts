import { insertedRow } from './insert.ts';
import type { NewTaskRow } from './row.ts';
import type { TaskTable } from './table.ts';

/** Inserts unless a task with the same fire key exists (another node won this cron fire); true when inserted. */
export async function insertTaskOnce(
  table: TaskTable,
  task: NewTaskRow & { fire_key: string },
  now: Date,
  runAfter: unknown = table.dialect.clock(table.knex),
): Promise<boolean> {
  await table.upsert({
    table: table.name,
    rows: [insertedRow(task, table.dialect.toDbTime(now), runAfter)],
    key: ['fire_key'],
  });
  const row = (await table.knex(table.name).where('fire_key', task.fire_key).first('id')) as { id: string } | undefined;
  return row?.id === task.id;
}
