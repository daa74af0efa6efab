import type { TaskJson } from '../../engine/types.ts';

/** One live event: its id in the events log, and the task as the API answers it. */
export interface TaskEvent {
  id: string;
  task: TaskJson;
}

/** Events held for a client that does not read; beyond it only each task's latest state is kept. */
const MAX_HELD = 1000;
/**
 * How long after a stream starts from the tasks' current state an event may still describe an older state: a
 * node records a change in the log a moment after the task's row is written (it batches), so a change stored
 * before the state was read can be numbered after it.
 */
const LATE_EVENT_MS = 10_000;

/**
 * The events of one open stream, read in order by its writer. A client that reads slower than events come
 * never grows memory without bound: past `MAX_HELD` waiting events only the latest of each task is kept, and
 * a client that falls behind on more tasks than that is closed (`overflowed`); it reconnects and resumes.
 */
export class Subscription implements AsyncIterable<TaskEvent> {
  private held: TaskEvent[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  /** Why it ended, when it did: the client went, the session ended, it fell behind, or the node is stopping. */
  reason: 'closed' | 'session' | 'overflowed' | 'shutdown' | undefined;
  private readonly onEnd = new Set<() => void>();
  /** The state each task started from, while events older than it may still arrive (see `LATE_EVENT_MS`). */
  private startedFrom: Map<string, TaskJson> | undefined;
  private startedUntil = 0;

  get closed(): boolean {
    return this.ended;
  }

  /**
   * Sends the tasks' current state first, then keeps a client from stepping back: a later event that is not
   * newer than a task's starting state is dropped, until the first one that is.
   */
  startFrom(events: TaskEvent[]): void {
    this.startedFrom = new Map(events.map((e) => [e.task.id, e.task]));
    this.startedUntil = Date.now() + LATE_EVENT_MS;
    for (const e of events) this.queue(e);
  }

  push(event: TaskEvent): void {
    if (this.ended || this.isStale(event.task)) return;
    this.queue(event);
  }

  private isStale(task: TaskJson): boolean {
    if (this.startedFrom && Date.now() > this.startedUntil) this.startedFrom = undefined;
    if (!this.startedFrom) return false;
    const start = this.startedFrom.get(task.id);
    if (!start) return false;
    const age = Date.parse(task.updated_at) - Date.parse(start.updated_at);
    // Progress leaves updated_at as it is, so within one state a lower progress is the older event.
    const stale = age < 0 || (age === 0 && task.status === start.status && task.progress <= start.progress);
    if (!stale) this.startedFrom.delete(task.id);
    return stale;
  }

  private queue(event: TaskEvent): void {
    if (this.ended) return;
    this.held.push(event);
    if (this.held.length > MAX_HELD) this.collapse();
    this.wake?.();
  }

  /** Keeps the latest event of each task, in the order of those latest events. */
  private collapse(): void {
    const latest = new Map<string, TaskEvent>();
    for (const e of this.held) {
      latest.delete(e.task.id);
      latest.set(e.task.id, e);
    }
    if (latest.size > MAX_HELD) return this.close('overflowed');
    this.held = [...latest.values()];
  }

  close(reason: NonNullable<Subscription['reason']> = 'closed'): void {
    if (this.ended) return;
    this.ended = true;
    this.reason = reason;
    this.held = [];
    this.wake?.();
    for (const f of this.onEnd) f();
  }

  /** Runs `f` once when the subscription ends (at once if it has). */
  whenClosed(f: () => void): void {
    if (this.ended) f();
    else this.onEnd.add(f);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<TaskEvent> {
    try {
      while (!this.ended) {
        const next = this.held.shift();
        if (next) {
          yield next;
          continue;
        }
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
      }
    } finally {
      this.close();
    }
  }
}
