import { changeGroups, type TaskChange } from '../db/tasks/change.ts';
import type { TaskStore } from '../db/tasks/store.ts';
import type { EngineLogger } from './types.ts';

interface Pending {
  change: TaskChange;
  attempts: number;
  resolve(applied: boolean): void;
}

/** Outcomes carry the time they are written: one time per batch, so equal outcomes share one UPDATE. */
function stamp(changes: TaskChange[]): void {
  const now = new Date().toISOString();
  for (const { patch } of changes) {
    if (patch.updated_at) patch.updated_at = now;
    if (patch.finished_at) patch.finished_at = now;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());
const MAX_BATCH = 200;
const MAX_ATTEMPTS = 10;

/**
 * Writes the outcome of finished runs. Changes queued within one turn of the event loop, or while the
 * writes in flight (at most `depth`) are under way, go out together, so under load many completions cost one
 * round trip, and an idle engine writes at once. A failed write is retried with backoff: a run's outcome
 * must not be lost to a database hiccup (the task would otherwise run again once its lease ran out).
 */
export class ChangeWriter {
  private queue: Pending[] = [];
  private inFlight = 0;
  /** The pump queued for the next turn, if any. */
  private scheduled: NodeJS.Immediate | undefined;
  /** After a failure, items go one at a time until the queue drains, so one bad change cannot hold others back. */
  private single = false;
  private idle: (() => void)[] = [];
  /** A claim that took the queue along is under way: changes queued meanwhile wait for the next claim (`along`). */
  private waitForClaim = false;

  constructor(
    private readonly store: TaskStore,
    private readonly logger: EngineLogger,
    private readonly depth = 1,
  ) {}

  /** Resolves with whether the row was still in the expected state (false: another node took the task over). */
  write(change: TaskChange): Promise<boolean> {
    return new Promise((resolve) => {
      this.queue.push({ change, attempts: 0, resolve });
      this.schedule();
    });
  }

  /** Resolves once everything queued so far is written (or given up). */
  drain(): Promise<void> {
    if (!this.queue.length && !this.inFlight && !this.scheduled) return Promise.resolve();
    return new Promise((r) => this.idle.push(r));
  }

  /**
   * Runs `statement` (a claim) with the queued changes it can take along (one group of `changeGroups`, none while
   * retrying one at a time or with the writes in flight at their limit), so they cost no statement of their
   * own; the changes are settled (or queued again on failure) as their own writes would be. When it can take the
   * queue (or the queue is empty), changes queued while it is under way are kept for the claim after it, until
   * `resume`; when it cannot, they go out by themselves as usual.
   */
  async along<T>(statement: (changes: TaskChange[]) => Promise<[boolean[], T]>): Promise<T> {
    const all = this.queue.length <= MAX_BATCH && !this.single && this.inFlight < this.depth;
    const changes = this.queue.map((p) => p.change);
    // Stamped before grouping, as a write stamps them: runs that ended in different milliseconds share one UPDATE.
    if (all && changes.length) stamp(changes);
    if (!all || (changes.length && changeGroups(changes).length !== 1)) return (await statement([]))[1];
    this.waitForClaim = true;
    if (!changes.length) return (await statement([]))[1];
    // The pump those changes queued has nothing left to write; cancelled, so changes queued from now on get a pump
    // of their own, after a claim the runs they end wake (else the stale pump goes first, and the claim takes none).
    clearImmediate(this.scheduled);
    this.scheduled = undefined;
    return this.apply(this.queue.splice(0), statement);
  }

  /** The claim `along` ran has answered: changes kept for the next claim go out by themselves unless one takes them. */
  resume(): void {
    this.waitForClaim = false;
    if (this.queue.length) this.schedule();
  }

  /** A pump at the next turn, unless one is due already: changes queued within one turn go out together. */
  private schedule(): void {
    this.scheduled ??= setImmediate(() => {
      this.scheduled = undefined;
      this.pump();
    });
  }

  private pump(): void {
    if (this.waitForClaim && !this.single && this.queue.length < MAX_BATCH) return;
    while (this.queue.length && this.inFlight < this.depth)
      void this.apply(this.queue.splice(0, this.single ? 1 : MAX_BATCH), async (changes) => {
        stamp(changes);
        return [await this.store.change(changes), undefined];
      }).catch(() => {});
    if (!this.queue.length && !this.inFlight) {
      this.single = false;
      for (const r of this.idle.splice(0)) r();
    }
  }

  private async apply<T>(batch: Pending[], statement: (changes: TaskChange[]) => Promise<[boolean[], T]>): Promise<T> {
    this.inFlight++;
    try {
      const [applied, value] = await statement(batch.map((p) => p.change));
      batch.forEach((p, i) => p.resolve(applied[i]!));
      return value;
    } catch (error) {
      await this.retryLater(batch, error);
      throw error;
    } finally {
      this.inFlight--;
      this.pump();
    }
  }

  /** A failed write goes back to the head of the queue after a backoff, until it has failed too often. */
  private async retryLater(batch: Pending[], error: unknown): Promise<void> {
    if (!batch.length) return;
    this.single = true;
    const keep = batch.filter((p) => {
      if (++p.attempts < MAX_ATTEMPTS) return true;
      this.logger.error(
        { err: error, task_id: p.change.id },
        'task state could not be written; giving up (the task runs again once its lease runs out)',
      );
      p.resolve(false);
      return false;
    });
    if (keep.length) {
      this.logger.warn({ err: error, tasks: keep.length }, 'writing task state failed; retrying');
      await sleep(Math.min(5000, 50 * 2 ** (keep[0]!.attempts - 1)));
      this.queue.unshift(...keep);
    }
  }
}
