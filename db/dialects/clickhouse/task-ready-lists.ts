import type { TaskRow } from '../../tasks/row.ts';

/** Most rows a list keeps; the rest stay in the database, read when the list runs short. */
const MAX_ROWS = 1000;
const MAX_LISTS = 8;
/** A complete list is read again at least this often, whatever happened. */
const COMPLETE_FOR_MS = 5000;

/**
 * Pending rows of some task types that no change in memory holds, for claims to take without reading the
 * database. Until `completeUntil`, it holds every such row that may run by then, and new ones join it.
 */
export interface ReadyList {
  readonly types: ReadonlySet<string>;
  readonly rows: Map<string, TaskRow>;
  completeUntil: number;
}

/**
 * The ready lists of one versioned task table (see TaskVersions), one per set of types claimed (one per
 * engine, usually the same), and what a read filling them must know: which inserts are under way (their rows
 * may be stored before their answer comes back) and whether anything that can put a pending row out of a
 * read's sight happened while it ran.
 */
export class ReadyLists {
  private readonly lists = new Map<string, ReadyList>();
  /** Ids of inserts under way: a read does not take them; they join when their answer comes. */
  readonly inserting = new Set<string>();
  /** Bumped when an insert ends: a read under way may have missed its rows. */
  generation = 0;

  for(types: string[]): ReadyList {
    const key = [...types].sort().join('\n');
    let list = this.lists.get(key);
    if (!list) {
      // Type sets change only when runners are registered: the oldest lists belong to no engine any more.
      if (this.lists.size >= MAX_LISTS) this.lists.delete(this.lists.keys().next().value!);
      list = { types: new Set(types), rows: new Map(), completeUntil: 0 };
      this.lists.set(key, list);
    }
    return list;
  }

  /** A pending row just inserted or leaving memory joins the complete lists of its type. */
  join(row: TaskRow): void {
    if (row.status !== 'pending' || row.deleted_at !== null) return;
    const now = Date.now();
    for (const list of this.lists.values()) {
      if (now >= list.completeUntil || !list.types.has(row.type) || list.rows.has(row.id)) continue;
      if (list.rows.size < MAX_ROWS) list.rows.set(row.id, row);
      else list.completeUntil = 0;
    }
  }

  forget(id: string): void {
    for (const list of this.lists.values()) list.rows.delete(id);
  }

  beginInsert(ids: string[]): void {
    for (const id of ids) this.inserting.add(id);
  }

  /** `rows`: what was stored, to join the lists; none when the insert failed (some rows may be stored anyway). */
  endInsert(ids: string[], rows: TaskRow[] | undefined): void {
    for (const id of ids) this.inserting.delete(id);
    this.generation++;
    if (rows) for (const row of rows) this.join(row);
    else for (const list of this.lists.values()) list.completeUntil = 0;
  }

  /**
   * Takes what a read of the oldest `limit` pending rows (neither in memory nor listed nor being inserted)
   * returned; `undisturbed`: nothing could have hidden a row from it while it ran.
   */
  filled(list: ReadyList, rows: TaskRow[], limit: number, undisturbed: boolean, startedAt: number): void {
    const at = new Date(startedAt).toISOString();
    let firstLater: string | undefined;
    for (const row of rows) {
      if (this.inserting.has(row.id)) continue;
      if (row.run_after <= at) list.rows.set(row.id, row);
      else firstLater ??= row.run_after;
    }
    // Rows come oldest first: every row left out may run no earlier than the first one not taken.
    const until = firstLater
      ? Math.min(Date.parse(firstLater), startedAt + COMPLETE_FOR_MS)
      : rows.length < limit
        ? startedAt + COMPLETE_FOR_MS
        : 0;
    list.completeUntil = undisturbed ? until : 0;
  }

  /** Whether the list must be read again before `limit` rows can be claimed from it. */
  short(list: ReadyList, limit: number, at: string): boolean {
    if (Date.now() < list.completeUntil) return false;
    let ready = 0;
    for (const row of list.rows.values()) if (row.run_after <= at && ++ready >= limit) return false;
    return true;
  }

  clear(): void {
    this.lists.clear();
  }
}
