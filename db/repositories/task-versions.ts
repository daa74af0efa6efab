import type { Knex } from 'knex';
import type { Database } from '../database.ts';
import type { DbLogger } from '../options.ts';
import type { TaskStore } from './task-store.ts';
import {
  heldOf, insertTaskOnce, insertTasks, taskFromDb, toDbPatch,
  type ClaimRequest, type HeldTask, type NewTaskRow, type TaskChange, type TaskFence, type TaskPatch, type TaskRow,
} from './tasks.ts';

/** How long a change waits for others to share its INSERT. */
const FLUSH_MS = 50;
const MAX_FLUSH_BACKOFF_MS = 5000;
const CHUNK = 500;
/** Pending rows a claim reads at once, and the most kept waiting in memory. */
const PREFETCH = 100;
const MAX_READY = 1000;
const MAX_TYPE_SETS = 8;

/**
 * Pending rows not in memory, of some task types, oldest first: claims take from here and read the database
 * only when it runs short. While `complete`, it holds every such row, and new ones join it.
 */
interface ReadyList {
  types: Set<string>;
  rows: Map<string, TaskRow>;
  complete: boolean;
}

/** The row a task's insert stores. */
function pendingRow(t: NewTaskRow, at: string): TaskRow {
  return {
    ...t,
    status: 'pending', progress: 0, result: null, error: null, retry_count: 0, artifact_file_key: null, artifact_file_name: null, log_backend: null,
    worker_id: null, claim_id: null, lease_expires_at: null, cancel_requested: false, run_after: at, created_at: at, updated_at: at, started_at: null,
    finished_at: null, deleted_at: null, version: 0,
  };
}

/**
 * Task writes for an engine without row locks, transactions or affected-row counts (ClickHouse), where one
 * process owns the database (DESIGN §2). Every change is a whole new row, `version` + 1, appended to a table
 * that reads the newest version of each id; nothing is updated in place.
 *
 * This process is the only writer, so it knows the newest version of every row it changed: those rows stay in
 * memory until they are stored, and running rows stay while they run (the claims are held here, not in the
 * database). Fences are checked on the newest version in memory, synchronously, so two changes of one row never
 * interleave; a claim takes pending rows that are not in memory from the database and the ones in memory from
 * there. Changes are buffered for up to 50 ms and stored with one INSERT; reads of the table settle the buffer
 * first, so every read sees every change made before it. Lost on a crash: at most the last 50 ms of changes,
 * which leaves tasks pending or running as they were, to run again (running rows of a process that is gone
 * count as expired at once).
 *
 * One instance serves every Database of the process on the same tables, so several consoles of one process
 * (the tests' nodes) share it as one owner.
 */
export class TaskVersions {
  /** The newest version of each row changed but not stored yet, and of each row running here. */
  private readonly known = new Map<string, TaskRow>();
  private readonly unstored = new Set<string>();
  /** Pending rows ready to claim, per set of task types claimed (one per engine, usually the same). */
  private readonly ready = new Map<string, ReadyList>();
  private readonly dbs: Database[] = [];
  private storing: Promise<void> | undefined;
  /** Changes made, and changes stored (every one up to this count), for settle to wait on its own. */
  private changes = 0;
  private stored = 0;
  /** Stores completed, and the reads under way by the count when each began. */
  private stores = 0;
  private readonly reads = new Map<number, number>();
  /**
   * Stored rows that left memory while a read was under way, by the store that wrote them: that read may
   * return an older version from before the store.
   */
  private readonly left = new Map<string, { row: TaskRow; store: number }>();
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly logger: DbLogger) {}

  attach(db: Database): TaskStore {
    this.dbs.push(db);
    return {
      insert: async (rows, now) => {
        await insertTasks(db, rows, now, db.dialect.toDbTime(now));
        this.inserted(rows, now);
      },
      insertOnce: async (row, now) => {
        const inserted = await insertTaskOnce(db, row, now, db.dialect.toDbTime(now));
        if (inserted) this.inserted([row], now);
        return inserted;
      },
      claim: (request) => this.claim(request),
      change: (changes) => this.change(changes),
      setProgress: async (id, claimId, progress) => void (await this.change([{ id, fence: { status: 'running', claimId }, patch: { progress } }])),
      setArtifact: async (id, fileKey, fileName) => {
        await this.change([{ id, patch: { artifact_file_key: fileKey, artifact_file_name: fileName, updated_at: new Date().toISOString() } }]);
      },
      renew: (workerId, ids, leaseMs) => this.renew(workerId, ids, leaseMs),
      held: (ids, onlyCancelled) => this.held(ids, onlyCancelled),
      expired: (limit) => this.expired(limit),
      remove: (ids) => this.remove(ids),
      settle: () => this.settle(),
      detach: () => this.detach(db),
    };
  }

  private async detach(db: Database): Promise<void> {
    // The last database of the process stores what is left; afterwards memory starts empty, as after a restart.
    if (this.dbs.length === 1) {
      try {
        await this.settle();
      } finally {
        clearTimeout(this.timer);
        this.timer = undefined;
        this.known.clear();
        this.unstored.clear();
        this.ready.clear();
      }
    }
    this.dbs.splice(this.dbs.indexOf(db), 1);
  }

  /** Any open database of these tables (they are the same tables). */
  private get db(): Database {
    const db = this.dbs[0];
    if (!db) throw new Error('the task store has no open database');
    return db;
  }

  private query(): Knex.QueryBuilder {
    return this.db.knex(this.db.t.tasks);
  }

  /**
   * Rows from the database, through `build`. A row that left memory while the query ran (stored, not running)
   * may come back in the version before that store: the stored one is returned instead.
   */
  private async select(build: (q: Knex.QueryBuilder) => Knex.QueryBuilder): Promise<TaskRow[]> {
    const from = this.stores;
    this.reads.set(from, (this.reads.get(from) ?? 0) + 1);
    try {
      const rows = ((await build(this.query())) as Record<string, unknown>[]).map(taskFromDb);
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
  private async current(ids: string[]): Promise<Map<string, TaskRow>> {
    const missing = ids.filter((id) => !this.known.has(id));
    const out = new Map<string, TaskRow>();
    if (missing.length) for (const row of await this.select((q) => q.whereIn('id', missing))) out.set(row.id, row);
    // A change made while the query ran is newer than what it read.
    for (const id of ids) {
      const row = this.known.get(id);
      if (row) out.set(id, row);
    }
    return out;
  }

  private inserted(rows: NewTaskRow[], now: Date): void {
    for (const row of rows) this.joinReady(pendingRow(row, now.toISOString()));
  }

  /** A pending row leaving memory or just inserted joins the lists that hold every such row of its type. */
  private joinReady(row: TaskRow): void {
    if (row.status !== 'pending' || row.deleted_at !== null) return;
    for (const list of this.ready.values()) {
      if (!list.complete || !list.types.has(row.type)) continue;
      if (list.rows.size < MAX_READY) list.rows.set(row.id, row);
      // The rest stays in the database, to be read when memory runs short.
      else list.complete = false;
    }
  }

  private forget(id: string): void {
    for (const list of this.ready.values()) list.rows.delete(id);
  }

  private readyFor(types: string[]): ReadyList {
    const key = [...types].sort().join('\n');
    let list = this.ready.get(key);
    if (!list) {
      // Type sets change only when runners are registered: the oldest lists are of no engine any more.
      if (this.ready.size >= MAX_TYPE_SETS) this.ready.delete(this.ready.keys().next().value!);
      list = { types: new Set(types), rows: new Map(), complete: false };
      this.ready.set(key, list);
    }
    return list;
  }

  private async claim(c: ClaimRequest): Promise<TaskRow[]> {
    const list = this.readyFor(c.types);
    if (!list.complete && list.rows.size < c.limit) await this.fill(list, Math.max(PREFETCH, c.limit));
    // Decided without awaiting from here: nothing else changes these rows in between.
    const now = new Date();
    const at = now.toISOString();
    const claimable = (r: TaskRow) => r.status === 'pending' && r.deleted_at === null && c.types.includes(r.type) && r.run_after <= at;
    const candidates = [...this.known.values()].filter(claimable);
    for (const row of list.rows.values()) {
      if (candidates.length >= c.limit * 2) break;
      if (claimable(row)) candidates.push(row);
    }
    candidates.sort((a, b) => (a.run_after < b.run_after ? -1 : a.run_after > b.run_after ? 1 : a.id < b.id ? -1 : 1));
    const lease = new Date(now.getTime() + c.leaseMs).toISOString();
    return candidates.slice(0, c.limit).map((row) => this.put(row, { ...c.patch, worker_id: c.workerId, claim_id: c.claimId, lease_expires_at: lease }));
  }

  /** Reads the oldest pending rows (backoffs included) that are neither in memory nor ready into `ready`. */
  private async fill(list: ReadyList, limit: number): Promise<void> {
    const storesBefore = this.stores;
    const rows = await this.select((q) =>
      q
        .where('status', 'pending')
        .whereNull('deleted_at')
        .whereIn('type', [...list.types])
        .whereNotIn('id', [...this.known.keys(), ...list.rows.keys()])
        .orderBy([{ column: 'run_after' }, { column: 'id' }])
        .limit(limit),
    );
    for (const row of rows) if (!this.known.has(row.id) && row.status === 'pending' && row.deleted_at === null) list.rows.set(row.id, row);
    // Rows the query left out because they were in memory, and that were stored meanwhile, are in neither.
    list.complete = rows.length < limit && this.stores === storesBefore;
  }

  private async change(changes: (Omit<TaskChange, 'fence'> & { fence?: TaskFence })[]): Promise<boolean[]> {
    const rows = await this.current(changes.map((c) => c.id));
    const at = new Date().toISOString();
    return changes.map((c) => {
      // An earlier change of this batch may have made a newer version.
      const row = this.known.get(c.id) ?? rows.get(c.id);
      if (!row || (c.fence && !this.holds(row, c.fence, at))) return false;
      this.put(row, c.patch);
      return true;
    });
  }

  private holds(row: TaskRow, fence: TaskFence, at: string): boolean {
    if (row.status !== fence.status || row.deleted_at !== null) return false;
    if (fence.claimId !== undefined && row.claim_id !== fence.claimId) return false;
    return !fence.leaseExpired || this.orphaned(row, at);
  }

  /** A running row nobody renews: its lease ran out, or no run of this process (the only one) holds it. */
  private orphaned(row: TaskRow, at: string): boolean {
    return row.lease_expires_at === null || row.lease_expires_at < at || !this.known.has(row.id);
  }

  private async renew(workerId: string, ids: string[], leaseMs: number): Promise<HeldTask[]> {
    const rows = await this.current(ids);
    const lease = new Date(Date.now() + leaseMs).toISOString();
    const out: HeldTask[] = [];
    for (const id of ids) {
      let row = this.known.get(id) ?? rows.get(id);
      if (!row) continue;
      if (row.worker_id === workerId && row.status === 'running') row = this.put(row, { lease_expires_at: lease });
      out.push(heldOf(row as unknown as Record<string, unknown>));
    }
    return out;
  }

  private async held(ids: string[], onlyCancelled = false): Promise<HeldTask[]> {
    const rows = [...(await this.current(ids)).values()];
    return rows.filter((r) => !onlyCancelled || r.cancel_requested).map((r) => heldOf(r as unknown as Record<string, unknown>));
  }

  private async expired(limit: number): Promise<TaskRow[]> {
    const at = new Date().toISOString();
    const stored = await this.select((q) => q.where('status', 'running').whereNotIn('id', [...this.known.keys()]).limit(limit));
    const here = [...this.known.values()].filter((r) => r.status === 'running' && this.orphaned(r, at));
    return [...stored.filter((r) => r.status === 'running' && !this.known.has(r.id)), ...here].slice(0, limit);
  }

  /** Rows with a change in memory are kept: the change (a retry) came after the cleanup chose them. */
  private async remove(ids: string[]): Promise<number> {
    const gone = ids.filter((id) => !this.known.has(id));
    for (const id of gone) this.forget(id);
    return gone.length ? this.query().whereIn('id', gone).del() : 0;
  }

  /** Makes the next version of `row` the newest, to be stored with the next INSERT. */
  private put(row: TaskRow, patch: TaskPatch): TaskRow {
    const { run_after_ms, ...columns } = patch;
    const next: TaskRow = { ...row, ...columns, version: row.version + 1 };
    if (run_after_ms !== undefined) next.run_after = new Date(Date.now() + run_after_ms).toISOString();
    this.known.set(next.id, next);
    this.forget(next.id);
    this.unstored.add(next.id);
    this.changes++;
    this.timer ??= setTimeout(() => this.storeLater(), FLUSH_MS).unref();
    return next;
  }

  private storeLater(): void {
    this.timer = undefined;
    this.store().then(
      () => (this.failures = 0),
      (error: unknown) => {
        this.failures++;
        this.logger.warn({ err: error, tasks: this.unstored.size }, 'storing task changes failed; retrying');
        this.timer ??= setTimeout(() => this.storeLater(), Math.min(MAX_FLUSH_BACKOFF_MS, FLUSH_MS * 2 ** this.failures)).unref();
      },
    );
  }

  /** Waits for the changes made until now only: under steady load there are always newer ones. */
  private async settle(): Promise<void> {
    const target = this.changes;
    while (this.stored < target) await this.store();
  }

  /** One INSERT (per 500 rows) of every unstored version; a store already under way is joined. */
  private store(): Promise<void> {
    this.storing ??= this.write().finally(() => (this.storing = undefined));
    return this.storing;
  }

  private async write(): Promise<void> {
    const upTo = this.changes;
    const rows = [...this.unstored].map((id) => this.known.get(id)!);
    const db = this.db;
    // Written again after a failure, whole: a version written twice is the same row.
    for (let i = 0; i < rows.length; i += CHUNK) await db.knex(db.t.tasks).insert(rows.slice(i, i + CHUNK).map((r) => toDbPatch(db, r)));
    this.stores++;
    this.stored = upTo;
    for (const row of rows) {
      if (this.known.get(row.id) !== row) continue;
      this.unstored.delete(row.id);
      if (row.status === 'running') continue;
      this.known.delete(row.id);
      this.joinReady(row);
      if (this.reads.size) this.left.set(row.id, { row, store: this.stores });
    }
  }
}
