import type { ChangeFeed } from '../../db/change-feed.ts';
import type { Database } from '../../db/database.ts';
import {
  firstTaskEventId,
  lastTaskEventId,
  readTaskEvents,
  type TaskEventFilter,
  type TaskEventRow,
} from '../../db/repositories/task-events.ts';
import { listCurrentTasks } from '../../db/repositories/tasks.ts';
import { UnavailableError } from '../../lib/errors.ts';
import { toTaskJson, type EngineLogger, type TaskJson } from '../../engine/types.ts';
import { Subscription, type TaskEvent } from './subscription.ts';

/** The change-feed channel the recorder announces new events on. */
export const TASK_EVENTS_CHANNEL = 'task_events';

const READ_BATCH = 1000;
/** At most this many events are replayed on resume; a client further behind starts from the current state. */
const MAX_REPLAY = 5000;
/** At most this many tasks' current state start a stream (the newest). */
const MAX_CURRENT = 1000;
const CURRENT_WINDOW_MS = 24 * 3_600_000;
/**
 * How long a missing id is waited for: ids are handed out at insert, so a row of another node's transaction may
 * become visible after rows with higher ids. Past this the gap is an id the database skipped (a rollback).
 */
const GAP_WAIT_MS = 3000;

interface Entry {
  sub: Subscription;
  filter: TaskEventFilter;
  /** Live events that arrived before the stream's first events were read, and whether those are read. */
  early: TaskEvent[] | undefined;
}

const eventOf = (row: TaskEventRow): TaskEvent => ({ id: String(row.id), task: JSON.parse(row.task) as TaskJson });

const matches = (f: TaskEventFilter, row: TaskEventRow) =>
  (!f.userId || row.user_id === f.userId) &&
  (!f.orgId || row.org_id === f.orgId) &&
  (!f.taskId || row.task_id === f.taskId);

/**
 * The one reader of the events log on this node: it reads the rows other nodes (and this one) added whenever
 * the change feed says there are new ones, and hands each to the open streams allowed to see it.
 */
export class TaskEventHub {
  private readonly entries = new Set<Entry>();
  /** Every id up to here was delivered (or given up as a gap). */
  private cursor = 0;
  /** Ids above the cursor already delivered. */
  private readonly seen = new Set<number>();
  private gapSince: number | undefined;
  /** No stream was open, so the log was not read: the cursor restarts at its end when one opens. */
  private stale = true;
  /** The cursor being set to the log's end (after `stale`); reads wait for it. */
  private seeding: Promise<void> = Promise.resolve();
  private reading = false;
  private again = false;
  private unsubscribe: (() => void) | undefined;
  private stopped = false;

  constructor(
    private readonly db: Database,
    private readonly feed: ChangeFeed,
    private readonly logger: EngineLogger,
  ) {}

  start(): void {
    this.unsubscribe ??= this.feed.subscribe((channel) => {
      if (channel === TASK_EVENTS_CHANNEL) void this.read();
    });
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    for (const e of this.entries) e.sub.close('shutdown');
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * A stream of the events `filter` lets through. It starts with the events after `lastEventId` when the log
   * still holds them all, else with the current state of every task the filter lets through that is pending,
   * running or finished in the last 24 hours (of the one task, whenever it finished).
   */
  async open(filter: TaskEventFilter, lastEventId?: string): Promise<Subscription> {
    if (this.stopped) throw new UnavailableError('error.shutting_down');
    const sub = new Subscription();
    const entry: Entry = { sub, filter, early: [] };
    this.entries.add(entry);
    sub.whenClosed(() => this.entries.delete(entry));
    try {
      if (this.stale) {
        this.stale = false;
        this.seeding = lastTaskEventId(this.db).then(
          (last) => {
            this.cursor = last;
            this.seen.clear();
          },
          (error: unknown) => {
            // The next stream to open tries again.
            this.stale = true;
            throw error;
          },
        );
      }
      await this.seeding;
      const { events, covers } = await this.first(filter, lastEventId);
      for (const e of events) sub.push(e);
      for (const e of entry.early!) if (!covers(Number(e.id))) sub.push(e);
      entry.early = undefined;
    } catch (error) {
      sub.close();
      throw error;
    }
    return sub;
  }

  private async first(
    filter: TaskEventFilter,
    lastEventId: string | undefined,
  ): Promise<{ events: TaskEvent[]; covers: (id: number) => boolean }> {
    const after = lastEventId !== undefined && /^\d{1,15}$/.test(lastEventId) ? Number(lastEventId) : undefined;
    if (after !== undefined && (await this.holdsSince(after))) {
      const rows = await readTaskEvents(this.db, after, MAX_REPLAY + 1, filter);
      if (rows.length <= MAX_REPLAY) {
        const ids = new Set(rows.map((r) => r.id));
        return { events: rows.map(eventOf), covers: (id) => id <= after || ids.has(id) };
      }
    }
    // Read before the tasks, so an event recorded meanwhile has a higher id and follows.
    const last = await lastTaskEventId(this.db);
    const since = new Date(filter.taskId ? 0 : Date.now() - CURRENT_WINDOW_MS);
    const tasks = await listCurrentTasks(
      this.db,
      { creatorId: filter.userId, orgId: filter.orgId, taskId: filter.taskId },
      since,
      MAX_CURRENT,
    );
    // Oldest first, as they happened; each carries the log's end, where a resume goes on from.
    const events = tasks.reverse().map((row) => ({ id: String(last), task: toTaskJson(row) }));
    return { events, covers: (id) => id <= last };
  }

  /** Whether every event after `after` is still in the log (not pruned), and `after` is an id it handed out. */
  private async holdsSince(after: number): Promise<boolean> {
    const [first, last] = await Promise.all([firstTaskEventId(this.db), lastTaskEventId(this.db)]);
    if (after > last) return false;
    return first === undefined ? after === last : after >= first - 1;
  }

  /** Reads what the log gained since the cursor and delivers it; calls during a read make one more read. */
  private async read(): Promise<void> {
    if (this.reading) {
      this.again = true;
      return;
    }
    if (!this.entries.size) {
      this.stale = true;
      return;
    }
    this.reading = true;
    try {
      await this.seeding;
      let rows: TaskEventRow[];
      do {
        this.again = false;
        rows = await readTaskEvents(this.db, this.cursor, READ_BATCH);
        this.deliver(rows);
        this.advance();
      } while (this.again || rows.length === READ_BATCH);
    } catch (error) {
      this.logger.warn({ err: error }, 'reading task events failed; the next change tries again');
    } finally {
      this.reading = false;
    }
  }

  private deliver(rows: TaskEventRow[]): void {
    for (const row of rows) {
      if (this.seen.has(row.id)) continue;
      this.seen.add(row.id);
      const event = eventOf(row);
      for (const e of this.entries) {
        if (!matches(e.filter, row)) continue;
        if (e.early) e.early.push(event);
        else e.sub.push(event);
      }
    }
  }

  /** Moves the cursor over delivered ids; over a missing one only once it stayed missing for `GAP_WAIT_MS`. */
  private advance(): void {
    for (const id of [...this.seen].sort((a, b) => a - b)) {
      if (id !== this.cursor + 1) {
        this.gapSince ??= Date.now();
        if (Date.now() - this.gapSince < GAP_WAIT_MS) return;
      }
      this.gapSince = undefined;
      this.cursor = id;
      this.seen.delete(id);
    }
  }
}
