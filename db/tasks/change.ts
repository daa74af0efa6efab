import type { Knex } from 'knex';
import { fenceConditions, toSql, type TaskFence } from './predicates.ts';
import { updateColumns, type TaskPatch } from './row.ts';
import type { TaskTable } from './table.ts';

export interface TaskChange {
  id: string;
  fence: TaskFence;
  patch: TaskPatch;
}

/**
 * One fenced UPDATE of a group's rows (see `changeGroups`; not run yet). Where the fence names a claim, each row is
 * fenced on its own change's claim: a group may hold the outcomes of runs of several claims.
 */
export function changeStatement(table: TaskTable, k: Knex, group: TaskChange[]) {
  const { fence, patch } = group[0]!;
  const q = k(table.name);
  if (fence.claimId === undefined)
    q.whereIn(
      'id',
      group.map((c) => c.id),
    );
  else {
    const idsByClaim = new Map<string | null | undefined, string[]>();
    for (const c of group) {
      const ids = idsByClaim.get(c.fence.claimId);
      if (ids) ids.push(c.id);
      else idsByClaim.set(c.fence.claimId, [c.id]);
    }
    q.where((any) => {
      for (const [claimId, ids] of idsByClaim)
        any.orWhere((one) => one.where('claim_id', claimId ?? null).whereIn('id', ids));
    });
  }
  return toSql(table, q, fenceConditions({ ...fence, claimId: undefined })).update(updateColumns(table, patch));
}

/**
 * Changes by the UPDATE each can share: changes with the same fence (but for the claim) and patch (typical of a
 * batch of finished runs) form one group, one UPDATE; answers the groups as indexes into `changes`.
 */
export function changeGroups(changes: TaskChange[]): number[][] {
  const groups = new Map<string, number[]>();
  changes.forEach((c, i) => {
    // Only changes that keep the claim can be grouped: afterwards each row's claim still tells whether it took its change.
    const groupable = c.fence.claimId && !c.fence.leaseExpired && !('claim_id' in c.patch) && c.patch.status;
    const key = groupable ? JSON.stringify([{ ...c.fence, claimId: undefined }, c.patch]) : `#${i}`;
    const group = groups.get(key);
    if (group) group.push(i);
    else groups.set(key, [i]);
  });
  return [...groups.values()];
}

/**
 * Which changes of one group took effect, the group's UPDATE having changed `n` rows: all or none when it
 * counted them all or had one row, else read back (a row that took its change holds that change's claim and the
 * group's status).
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
  const claimOf = new Map(rows.filter((r) => r.status === first!.patch.status).map((r) => [String(r.id), r.claim_id]));
  return group.map((c) => claimOf.get(c.id) === c.fence.claimId);
}

/** Applies many fenced changes, in one transaction when there are several statements. */
export async function changeTasks(table: TaskTable, changes: TaskChange[]): Promise<boolean[]> {
  const groups = changeGroups(changes);
  const run = async (k: Knex): Promise<boolean[]> => {
    const out: boolean[] = new Array(changes.length).fill(false);
    for (const members of groups) {
      const group = members.map((i) => changes[i]!);
      const n = await changeStatement(table, k, group);
      (await groupApplied(table, k, group, n)).forEach((applied, j) => (out[members[j]!] = applied));
    }
    return out;
  };
  return groups.length === 1 ? run(table.knex) : table.knex.transaction((trx) => run(trx));
}
