import { heldFromDb, type HeldTask } from './row.ts';
import type { TaskTable } from './table.ts';

/** How each of these tasks stands now (status, claim, cancel flag); only the cancelled ones when asked. */
export async function heldTasks(table: TaskTable, ids: string[], onlyCancelled = false): Promise<HeldTask[]> {
  if (!ids.length) return [];
  const q = table.knex(table.name).whereIn('id', ids).select('id', 'status', 'claim_id', 'cancel_requested');
  if (onlyCancelled) q.where('cancel_requested', true);
  return ((await q) as Record<string, unknown>[]).map(heldFromDb);
}
