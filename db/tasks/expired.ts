import { whereStatus } from './predicates.ts';
import { taskFromDb, type TaskRow } from './row.ts';
import type { TaskTable } from './table.ts';

/** Running tasks whose lease ran out (their node died or lost the database). */
export async function expiredLeases(table: TaskTable, limit: number): Promise<TaskRow[]> {
  const rows = (await whereStatus(table.knex(table.name), 'running')
    .where('lease_expires_at', '<', table.dialect.clock(table.knex))
    .limit(limit)) as Record<string, unknown>[];
  return rows.map(taskFromDb);
}
