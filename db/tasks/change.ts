import type { Knex } from 'knex';
import { fenceConditions, toSql, type TaskFence } from './predicates.ts';
import { toDbPatch, type TaskPatch } from './row.ts';
import type { TaskTable } from './table.ts';

export interface TaskChange {
  id: string;
  fence: TaskFence;
  patch: TaskPatch;
}

/** One fenced UPDATE of the rows `ids` (not run yet). */
export function changeStatement(table: TaskTable, k: Knex, ids: string[], fence: TaskFence, patch: TaskPatch) {
  return toSql(table, k(table.name).whereIn('id', ids), fenceConditions(fence)).update(toDbPatch(table, patch));
}

/**
 * Changes by the UPDATE each can share: changes with the same fence and patch (typical of a batch of finished
 * runs) form one group, one UPDATE; answers the groups as indexes into `changes`.
 */
export function changeGroups(changes: TaskChange[]): number[][] {
  const groups = new Map<string, number[]>();
  changes.forEach((c, i) => {
    // Only changes that keep the claim can be grouped: afterwards the claim still tells which rows took them.
    const groupable = c.fence.claimId && !c.fence.leaseExpired && !('claim_id' in c.patch) && c.patch.status;
    const key = groupable ? JSON.stringify([c.fence, c.patch]) : `#${i}`;
    const group = groups.get(key);
    if (group) group.push(i);
    else groups.set(key, [i]);
  });
  return [...groups.values()];
}

/**
 * Which changes of one group took effect, the group's UPDATE having changed `n` rows: all or none when it
 * counted them all or had one row, else read back (the rows that took it hold its claim and its status).
 */
export async function groupApplied(table: TaskTable, k: Knex, group: TaskChange[], n: number): Promise<boolean[]> {
  if (n === group.length) return group.map(() => true);
  if (group.length === 1) return [false];
  const [first] = group;
  const rows = (await k(table.name)
    .whereIn(
      'id',
      group.map((c) => c.id),
    )
    .select('id', 'claim_id', 'status')) as Record<string, unknown>[];
  const took = new Set(
    rows
      .filter((r) => r.claim_id === first!.fence.claimId && r.status === first!.patch.status)
      .map((r) => String(r.id)),
  );
  return group.map((c) => took.has(c.id));
}

/** Applies many fenced changes, in one transaction when there are several statements. */
export async function changeTasks(table: TaskTable, changes: TaskChange[]): Promise<boolean[]> {
  const groups = changeGroups(changes);
  const run = async (k: Knex): Promise<boolean[]> => {
    const out: boolean[] = new Array(changes.length).fill(false);
    for (const members of groups) {
      const group = members.map((i) => changes[i]!);
      const { fence, patch } = group[0]!;
      const n = await changeStatement(
        table,
        k,
        group.map((c) => c.id),
        fence,
        patch,
      );
      (await groupApplied(table, k, group, n)).forEach((applied, j) => (out[members[j]!] = applied));
    }
    return out;
  };
  return groups.length === 1 ? run(table.knex) : table.knex.transaction((trx) => run(trx));
}
