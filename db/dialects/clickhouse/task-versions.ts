import type { Knex } from 'knex';
import type { DbLogger } from '../../options.ts';
import type { TaskChange } from '../../tasks/change.ts';
import type { ClaimRequest } from '../../tasks/claim.ts';
import { deleteTasks } from '../../tasks/delete.ts';
import { insertTaskOnce } from '../../tasks/insert-once.ts';
import { insertTasks } from '../../tasks/insert.ts';
import {
  CLAIM_ORDER,
  claimable,
  fenceConditions,
  heldBy,
  matches,
  pendingOf,
  toSql,
  type TaskFence,
} from '../../tasks/predicates.ts';
import {
  artifactColumns,
  byRunAfter,
  pendingTaskRow,
  taskFromDb,
  toDbPatch,
  type HeldTask,
  type NewTaskRow,
  type TaskPatch,
  type TaskRow,
} from '../../tasks/row.ts';
import type { TaskStore } from '../../tasks/store.ts';
import type { TaskTable } from '../../tasks/table.ts';
import { ReadyLists, type ReadyList } from './task-ready-lists.ts';
import { WriteLoop } from './write-loop.ts';

/** Failed stores in a row after which rows are written one at a time, so one the server refuses cannot hold back the rest. */
const ONE_BY_ONE_AFTER = 3;
const CHUNK = 500;
/** Pending rows a claim reads at once. */
const PREFETCH = 100;

const held = ({ id, status, claim_id, cancel_requested }: TaskRow): HeldTask => ({
  id,
  status,
  claim_id,
  cancel_requested,
});

/**
 * Task writes for an engine without row locks, transactions or affected-row counts (ClickHouse), where one
 * process owns the database (docs/architecture.md). Every change is a whole new row, `version` + 1, appended to a table
 * that reads the newest version of each id; nothing is updated in place.
 *
 * This process is the only writer, so it knows the newest version of every row it changed: those rows stay in
 * memory until they are stored, and running rows stay while they run (the claims are held here, not in the
 * database). Fences are checked on the newest version in memory, synchronously, so two changes of one row never
 * interleave; claims take pending rows from memory (the ready lists, task-ready-lists.ts, read from the database
 * 100 at a time). Changes are buffered for up to 50 ms and stored with one INSERT (when: write-loop.ts); reads
 * of the table settle the buffer first, so every read sees every change made before it. Lost on a crash: at
 * most the last 50 ms of changes (while the database refuses writes, the changes since; nothing is claimed
 * then), which leaves tasks pending or running as they were, to run again (running rows of a process that is
 * gone count as expired at once).
 *
 * One instance serves every TaskTable of the process on the same tables, so several consoles of one process
 * (the tests' nodes) share it as one owner.
 */
export class TaskVersions {
  /** The newest version of each row changed but not stored yet, and of each row running here. */
  private readonly known = new Map<string, TaskRow>();
  private readonly unstored = new Set<string>();
  private readonly ready = new ReadyLists();
  private readonly tables: TaskTable[] = [];
  /** Stores the unstored versions; while its writes fail, nothing is claimed (what runs could not be stored). */
  private readonly loop: WriteLoop;
  /** Stores completed, and the reads under way by the count when each began. */
  private stores = 0;
  private readonly reads = new Map<number, number>();
  /**
   * Stored rows that left memory while a read was under way, by the store that wrote them: that read may
   * return an older version from before the store.
   */
  private readonly left = new Map<string, { row: TaskRow; store: number }>();

  constructor(private readonly logger: DbLogger) {
    this.loop = new WriteLoop(
      () => this.write(),
      (error) => logger.warn({ err: error, tasks: this.unstored.size }, 'storing task changes failed; retrying'),
    );
  }

  /** The store as one TaskTable sees it: its statements go through that database's connections. */
  attach(table: TaskTable): TaskStore {
    this.tables.push(table);
    return {
      insert: async (rows, now) =>
        void (await this.insert(rows, now, () =>
          insertTasks(table, rows, now, table.dialect.toDbTime(now)).then(() => true),
        )),
      insertOnce: (row, now) =>
        this.insert([row], now, () => insertTaskOnce(table, row, now, table.dialect.toDbTime(now))),
      claim: (request) => this.claim(table, request),
      change: (changes) => this.change(table, changes),
      setProgress: async (id, claimId, progress) =>
        (await this.change(table, [{ id, fence: heldBy(claimId), patch: { progress } }]))[0]!,
      setArtifact: async (id, claimId, fileKey, fileName) =>
        (await this.change(table, [{ id, fence: heldBy(claimId), patch: artifactColumns(fileKey, fileName) }]))[0]!,
      renew: (workerId, ids, leaseMs) => this.renew(table, workerId, ids, leaseMs),
      held: (ids, onlyCancelled) => this.held(table, ids, onlyCancelled),
      expired: (limit) => this.expired(table, limit),
      remove: (ids) => this.remove(table, ids),
      settle: () => this.loop.settle(),
      detach: () => this.detach(table),
    };
  }

  private async detach(table: TaskTable): Promise<void> {
    const last = this.tables.length === 1;
    try {
      // The last database of the process stores what is left; another may be what a store under way uses.
      if (last) await this.loop.settle();
      else await this.loop.idle();
    } finally {
      this.tables.splice(this.tables.indexOf(table), 1);
      // Afterwards memory starts empty, as after a restart.
      if (last) {
        this.loop.reset();
        this.known.clear();
        this.unstored.clear();
        this.ready.clear();
        this.left.clear();
      }
    }
  }

  private async insert(rows: NewTaskRow[], now: Date, write: () => Promise<boolean>): Promise<boolean> {
    const ids = rows.map((r) => r.id);
    this.ready.beginInsert(ids);
    let inserted: boolean;
    try {
      inserted = await write();
    } catch (error) {
      this.ready.endInsert(ids, undefined);
      throw error;
    }
    this.ready.endInsert(ids, inserted ? rows.map((r) => pendingTaskRow(r, now.toISOString())) : []);
    return inserted;
  }

  /**
   * Rows from the database, through `build`. A row that left memory while the query ran (stored, not running)
   * may come back in the version before that store: the stored one is returned instead.
   */
  private async select(table: TaskTable, build: (q: Knex.QueryBuilder) => Knex.QueryBuilder): Promise<TaskRow[]> {
    const from = this.stores;
    this.reads.set(from, (this.reads.get(from) ?? 0) + 1);
    try {
      const rows = ((await build(table.knex(table.name))) as Record<string, unknown>[]).map(taskFromDb);
      return rows.map((r) => {
        const left = this.left.get(r.id);
        return left && left.store > from && left.row.version > r.version ? left.row : r;
      });
    } finally {
      const n = this.reads.get(from)! - 1;
      if (n) this.reads.set(from, n);
      else this.reads.delete(from);
      const oldest = this.reads.size ? Math.min(...this.reads.keys()) : Infinity;
      for (const [id, left] of this.left) if (left.store <= oldest) this.left.delete(id);
    }
  }

  /** The newest version of each row: memory first, the database for the rest. */
  private async current(table: TaskTable, ids: string[]): Promise<Map<string, TaskRow>> {
    const missing = ids.filter((id) => !this.known.has(id));
    const out = new Map<string, TaskRow>();
    if (missing.length)
      for (const row of await this.select(table, (q) => q.whereIn('id', missing))) out.set(row.id, row);
    // A change made while the query ran is newer than what it read.
    for (const id of ids) {
      const row = this.known.get(id);
      if (row) out.set(id, row);
    }
    return out;
  }

  private async claim(table: TaskTable, c: ClaimRequest): Promise<TaskRow[]> {
    // A run whose outcome cannot be stored would be lost with everything after it: wait for the database.
    if (this.loop.failures) throw new Error('task changes are not being stored; claims wait until they are');
    const list = this.ready.for(c.types);
    if (this.ready.short(list, c.limit, new Date().toISOString()))
      await this.fill(table, list, Math.max(PREFETCH, c.limit));
    // Decided without awaiting from here: nothing else changes these rows in between.
    const now = new Date();
    const at = now.toISOString();
    const filter = claimable(c.types);
    const candidates = [...this.known.values()].filter((r) => matches(r, filter, at));
    for (const row of list.rows.values()) {
      if (candidates.length >= c.limit * 2) break;
      if (matches(row, filter, at)) candidates.push(row);
    }
    candidates.sort(byRunAfter);
    const lease = new Date(now.getTime() + c.leaseMs).toISOString();
    return candidates
      .slice(0, c.limit)
      .map((row) => this.put(row, { ...c.patch, worker_id: c.workerId, claim_id: c.claimId, lease_expires_at: lease }));
  }

  /** Reads the oldest pending rows that are neither in memory, nor listed, nor being inserted into the list. */
  private async fill(table: TaskTable, list: ReadyList, limit: number): Promise<void> {
    const startedAt = Date.now();
    const generation = this.ready.generation;
    const stores = this.stores;
    const pending = pendingOf([...list.types]);
    const rows = await this.select(table, (q) =>
      toSql(table, q, pending)
        .whereNotIn('id', [...this.known.keys(), ...list.rows.keys(), ...this.ready.inserting])
        .orderBy(CLAIM_ORDER)
        .limit(limit),
    );
    const at = new Date().toISOString();
    const fresh = rows.filter((r) => !this.known.has(r.id) && matches(r, pending, at));
    // A store (rows the query skipped as in memory left it) or an insert ending meanwhile may hide a row from it.
    this.ready.filled(
      list,
      fresh,
      limit,
      generation === this.ready.generation && stores === this.stores && fresh.length === rows.length,
      startedAt,
    );
  }

  private async change(table: TaskTable, changes: TaskChange[]): Promise<boolean[]> {
    const rows = await this.current(
      table,
      changes.map((c) => c.id),
    );
    const at = new Date().toISOString();
    return changes.map((c) => {
      // An earlier change of this batch may have made a newer version.
      const row = this.known.get(c.id) ?? rows.get(c.id);
      if (!row || !this.holds(row, c.fence, at)) return false;
      this.put(row, c.patch);
      return true;
    });
  }

  /** The fence of the SQL stores, but for the lease: here a running row no run of this process holds is expired. */
  private holds(row: TaskRow, fence: TaskFence, at: string): boolean {
    const { leaseExpired, ...rest } = fence;
    return matches(row, fenceConditions(rest), at) && (!leaseExpired || this.orphaned(row, at));
  }

  /** A running row nobody renews: its lease ran out, or no run of this process (the only one) holds it. */
  private orphaned(row: TaskRow, at: string): boolean {
    return row.lease_expires_at === null || row.lease_expires_at < at || !this.known.has(row.id);
  }

  private async renew(table: TaskTable, workerId: string, ids: string[], leaseMs: number): Promise<HeldTask[]> {
    const rows = await this.current(table, ids);
    const lease = new Date(Date.now() + leaseMs).toISOString();
    const out: HeldTask[] = [];
    for (const id of ids) {
      let row = this.known.get(id) ?? rows.get(id);
      if (!row) continue;
      if (row.worker_id === workerId && row.status === 'running') row = this.put(row, { lease_expires_at: lease });
      out.push(held(row));
    }
    return out;
  }

  private async held(table: TaskTable, ids: string[], onlyCancelled = false): Promise<HeldTask[]> {
    const rows = [...(await this.current(table, ids)).values()];
    return rows.filter((r) => !onlyCancelled || r.cancel_requested).map(held);
  }

  private async expired(table: TaskTable, limit: number): Promise<TaskRow[]> {
    const at = new Date().toISOString();
    const stored = await this.select(table, (q) =>
      q
        .where('status', 'running')
        .whereNotIn('id', [...this.known.keys()])
        .limit(limit),
    );
    const here = [...this.known.values()].filter((r) => r.status === 'running' && this.orphaned(r, at));
    return [...stored.filter((r) => r.status === 'running' && !this.known.has(r.id)), ...here].slice(0, limit);
  }

  /** Rows with a change in memory are kept: the change (a retry) came after the cleanup chose them. */
  private async remove(table: TaskTable, ids: string[]): Promise<number> {
    const gone = ids.filter((id) => !this.known.has(id));
    for (const id of gone) this.ready.forget(id);
    return deleteTasks(table, gone);
  }

  /** Makes the next version of `row` the newest, to be stored with the next INSERT. */
  private put(row: TaskRow, patch: TaskPatch): TaskRow {
    const { run_after_ms, ...columns } = patch;
    const next: TaskRow = { ...row, ...columns, version: row.version + 1 };
    if (run_after_ms !== undefined) next.run_after = new Date(Date.now() + run_after_ms).toISOString();
    this.known.set(next.id, next);
    this.ready.forget(next.id);
    this.unstored.add(next.id);
    this.loop.changed();
    return next;
  }

  /** One INSERT (per 500 rows) of every unstored version, for the loop; a version written twice is the same row. */
  private async write(): Promise<void> {
    const table = this.tables[0];
    if (!table) throw new Error('the task store has no open database');
    const rows = [...this.unstored].map((id) => this.known.get(id)!);
    const insert = (batch: TaskRow[]) => table.knex(table.name).insert(batch.map((r) => toDbPatch(table, r)));
    if (this.loop.failures < ONE_BY_ONE_AFTER) {
      for (let i = 0; i < rows.length; i += CHUNK) await insert(rows.slice(i, i + CHUNK));
    } else {
      const refused = await this.writeOneByOne(rows, insert);
      // Every row failing is the database failing: they are all kept for the next attempt.
      if (refused.length === rows.length && rows.length) throw refused[0]!.error;
      for (const { row, error } of refused) {
        // A newer version made meanwhile is written next: it holds this change and the later ones, and memory
        // already answers it, so dropping it too would leave memory and the table apart.
        if (this.known.get(row.id) !== row) {
          this.logger.error(
            { err: error, task_id: row.id },
            'the database refuses this task change; the newer change made since, which includes it, is tried next',
          );
          continue;
        }
        this.logger.error(
          { err: error, task_id: row.id },
          'the database refuses this task change; it is dropped (the task keeps its stored state)',
        );
        this.known.delete(row.id);
        this.unstored.delete(row.id);
      }
    }
    this.stores++;
    for (const row of rows) {
      if (this.known.get(row.id) !== row) continue;
      this.unstored.delete(row.id);
      if (row.status === 'running') continue;
      this.known.delete(row.id);
      this.ready.join(row);
      if (this.reads.size) this.left.set(row.id, { row, store: this.stores });
    }
  }

  private async writeOneByOne(
    rows: TaskRow[],
    insert: (batch: TaskRow[]) => PromiseLike<unknown>,
  ): Promise<{ row: TaskRow; error: unknown }[]> {
    const refused: { row: TaskRow; error: unknown }[] = [];
    for (const row of rows) {
      try {
        await insert([row]);
      } catch (error) {
        refused.push({ row, error });
      }
    }
    return refused;
  }
}
