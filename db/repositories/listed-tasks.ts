import { deepFreeze } from '../../lib/deep-freeze.ts';
import { lruCache, type Lru } from '../../lib/lru.ts';
import type { MaybePromise } from '../../lib/maybe-async.ts';
import type { Database } from '../database.ts';
import { isoFromDb } from '../dialects/index.ts';
import type { TaskRow } from '../tasks/row.ts';

/** The columns lists show: a task as the API answers it, without the claim bookkeeping. */
export const LISTED_COLUMNS = [
  'id',
  'type',
  'status',
  'category',
  'payload',
  'progress',
  'result',
  'error',
  'retry_count',
  'max_retries',
  'creator_id',
  'cron_schedule_id',
  'artifact_file_key',
  'artifact_file_name',
  'org_id',
  'created_at',
  'updated_at',
  'started_at',
  'finished_at',
] as const;

export type ListedTask = Pick<TaskRow, (typeof LISTED_COLUMNS)[number]>;

/** What a list reads first: which tasks are on the page, in its order, and the state each is in. */
export const KEY_COLUMNS = ['id', 'version'] as const;

/**
 * A listed row as read, converted in place: the read made the object for this answer alone, so a copy of it (a
 * spread, which V8 makes on a slow path) was pure cost. The bookkeeping columns are not read at all: on SQLite
 * they made a page half as dear again.
 */
function listedTaskFromDb(raw: Record<string, unknown>): ListedTask {
  raw.progress = Number(raw.progress);
  raw.retry_count = Number(raw.retry_count);
  raw.max_retries = Number(raw.max_retries);
  raw.created_at = isoFromDb(raw.created_at);
  raw.updated_at = isoFromDb(raw.updated_at);
  raw.started_at = isoFromDb(raw.started_at);
  raw.finished_at = isoFromDb(raw.finished_at);
  return raw as unknown as ListedTask;
}

/** How long a row is kept at most: what a list may lag behind a node of a release before rows had versions. */
const KEPT_MS = 5_000;

/** A row with more characters than this in its payload, result and error is not kept: a page must not pin megabytes. */
const KEPT_TEXT = 4_096;

const textOf = (row: ListedTask) => row.payload.length + (row.result?.length ?? 0) + (row.error?.length ?? 0);

/**
 * Listed rows kept between requests, by id and version (a task's version grows with every change of its row, see
 * db/tasks/row.ts), at most `size` of them and for at most five seconds. A list reads only its page's ids and
 * versions, then the rows it does not keep at those versions: a page of ten rows cost SQLite three times a page of
 * none, and their conversion, validation and serialisation as much again. Kept rows are deep-frozen, so the
 * transports validate and serialise each once (server/http/frozen-answers.ts). A changed task has another
 * version, so no kept row is ever shown for it; the five seconds bound what a node of an older release, which
 * changes rows without growing their version, can leave a list showing while a cluster is being upgraded.
 */
export class KeptTaskRows {
  private readonly rows: Lru<string, { version: number; row: ListedTask; until: number }>;
  /**
   * Pages whose rows were all kept, by length, first and last id; at most `size` rows together. The transports
   * keep their work per object (a page's validated rows, its joined JSON), so a page of the same rows again is
   * answered as the same deep-frozen array rather than a new one of the same rows.
   */
  private readonly pages: Lru<string, ListedTask[]>;

  constructor(
    size: number,
    private readonly keptMs = KEPT_MS,
  ) {
    this.rows = lruCache(size);
    this.pages = lruCache(size, (page) => page.length);
  }

  /**
   * The rows of `keys` (as a list read them: `KEY_COLUMNS`), in their order; without a promise when all are
   * kept. A task deleted between the two reads is left out, as if the list had been read after the delete.
   */
  of(db: Database, keys: Record<string, unknown>[]): MaybePromise<ListedTask[]> {
    const now = Date.now();
    const found: (ListedTask | undefined)[] = new Array(keys.length);
    let missing: string[] | undefined;
    keys.forEach((k, i) => {
      const id = String(k.id);
      const kept = this.rows.get(id);
      if (kept?.version === Number(k.version) && now < kept.until) found[i] = kept.row;
      else (missing ??= []).push(id);
    });
    return missing ? this.read(db, keys, found, missing, now) : this.samePage(found as ListedTask[]);
  }

  /**
   * A page of kept rows as the page of the same rows handed out before, if there was one; else `rows`, frozen
   * and remembered. Only pages of kept rows are remembered: they hold no row a list would not keep (over 4 KB).
   */
  private samePage(rows: ListedTask[]): ListedTask[] {
    const first = rows[0];
    if (!first) return rows;
    const key = `${rows.length}\u0000${first.id}\u0000${rows[rows.length - 1]!.id}`;
    const last = this.pages.get(key);
    if (last?.every((row, i) => row === rows[i])) return last;
    this.pages.set(key, deepFreeze(rows));
    return rows;
  }

  /** `found` completed with the `missing` rows, read and kept. */
  private async read(
    db: Database,
    keys: Record<string, unknown>[],
    found: (ListedTask | undefined)[],
    missing: string[],
    now: number,
  ): Promise<ListedTask[]> {
    const read = await db.read(
      db
        .knex(db.t.tasks)
        .whereIn('id', missing)
        .whereNull('deleted_at')
        .select([...LISTED_COLUMNS, 'version']),
    );
    const byId = new Map<string, ListedTask>();
    for (const raw of read) {
      const version = Number(raw.version);
      // Deleted while it is the last property, V8 keeps the row's fast shape.
      delete raw.version;
      const row = deepFreeze(listedTaskFromDb(raw));
      byId.set(row.id, row);
      if (textOf(row) <= KEPT_TEXT) this.rows.set(row.id, { version, row, until: now + this.keptMs });
    }
    keys.forEach((k, i) => (found[i] ??= byId.get(String(k.id))));
    return found.filter((row) => row !== undefined);
  }
}
