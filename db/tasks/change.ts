import type { Knex } from 'knex';
import { fenceConditions, toSql, type TaskFence } from './predicates.ts';
import { toDbPatch, type TaskPatch } from './row.ts';
import type { TaskTable } from './table.ts';

export interface TaskChange {
  id: string;
  fence: TaskFence;
  patch: TaskPatch;
}

/** One fenced UPDATE of the rows `ids`; answers how many took it. */
function update(table: TaskTable, k: Knex, ids: string[], fence: TaskFence, patch: TaskPatch): Promise<number> {
  const q = toSql(table, k(table.name).whereIn('id', ids), fenceConditions(fence));
  return q.update(toDbPatch(table, patch));
}

/**
 * Applies many fenced changes, in one transaction when there are several statements. Changes with the same
 * fence and patch (typical of a batch of finished runs) go out as one UPDATE.
 */
export async function changeTasks(table: TaskTable, changes: TaskChange[]): Promise<boolean[]> {
  const groups = new Map<string, number[]>();
  changes.forEach((c, i) => {
    // Only changes that keep the claim can be grouped: afterwards the claim still tells which rows took them.
    const groupable = c.fence.claimId && !c.fence.leaseExpired && !('claim_id' in c.patch) && c.patch.status;
    const key = groupable ? JSON.stringify([c.fence, c.patch]) : `#${i}`;
    groups.set(key, [...(groups.get(key) ?? []), i]);
  });
  const run = async (k: Knex): Promise<boolean[]> => {
    const out: boolean[] = new Array(changes.length).fill(false);
    for (const members of groups.values()) {
      const first = changes[members[0]!]!;
      const ids = members.map((i) => changes[i]!.id);
      const n = await update(table, k, ids, first.fence, first.patch);
      if (n === ids.length) for (const i of members) out[i] = true;
      else if (ids.length > 1) {
        // Some rows had left the fence: find out which ones did take the change.
        const rows = (await k(table.name).whereIn('id', ids).select('id', 'claim_id', 'status')) as Record<
          string,
          unknown
        >[];
        const took = new Set(
          rows
            .filter((r) => r.claim_id === first.fence.claimId && r.status === first.patch.status)
            .map((r) => String(r.id)),
        );
        for (const i of members) out[i] = took.has(changes[i]!.id);
      }
    }
    return out;
  };
  return groups.size === 1 ? run(table.knex) : table.knex.transaction((trx) => run(trx));
}
