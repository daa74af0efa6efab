import type { TaskTable } from './table.ts';

/** Hard delete (the retention cleanup); answers how many went. */
export async function deleteTasks(table: TaskTable, ids: string[]): Promise<number> {
  return ids.length ? table.knex(table.name).whereIn('id', ids).del() : 0;
}
