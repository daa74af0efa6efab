import { heldTasks } from './held.ts';
import { whereStatus } from './predicates.ts';
import type { HeldTask } from './row.ts';
import type { TaskTable } from './table.ts';

/** Extends the leases of this worker's running tasks and reports how each of them stands now. */
export async function renewLeases(
  table: TaskTable,
  workerId: string,
  ids: string[],
  leaseMs: number,
): Promise<HeldTask[]> {
  const { knex, dialect } = table;
  const out: HeldTask[] = [];
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    await whereStatus(knex(table.name).whereIn('id', chunk), 'running')
      .where('worker_id', workerId)
      .update({ lease_expires_at: dialect.clock(knex, leaseMs) });
    out.push(...(await heldTasks(table, chunk)));
  }
  return out;
}
