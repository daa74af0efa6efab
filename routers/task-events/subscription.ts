import type { TaskJson } from '../../engine/types.ts';
import { lruCache } from '../../lib/lru.ts';

/** One live event: its id in the events log, and the task as the API answers it. */
export interface TaskEvent {
  id: string;
  task: TaskJson;
}

/** Events held for a client that does not read; beyond it only each task's latest state is kept. */
const MAX_HELD = 1000;
/** Tasks whose last sent state a stream remembers, to drop an older one that arrives after it. */
const REMEMBERED = 1000;

/** What a stream last sent of a task: the time of its state, its status and progress. */
interface Sent {
  at: number;
  status: TaskJson['status'];
  progress: number;
}

/**
 * The events of one open stream, read in order by its writer. A client that reads slower than events come
 * never grows memory without bound: past `MAX_HELD` waiting events only the latest of each task is kept, and
 * a client that falls behind on more tasks than that is closed (`overflowed`); it reconnects and resumes.
 */
export class Subscription implements AsyncIterable<TaskEvent> {
  private held: TaskEvent[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  /**
   * Why it ended, when it did: the client went, the session ended, the user lost the permission, it fell behind,
   * or the node is stopping.
   */
  reason: 'closed' | 'session' | 'forbidden' | 'overflowed' | 'shutdown' | undefined;
  private readonly onEnd = new Set<() => void>();
  private readonly sent = lruCache<string, Sent>(REMEMBERED);

  get closed(): boolean {
    return this.ended;
  }

  /**
   * Queues `event` unless it is older than what this stream last sent of its task. Each node records a change in
   * the log a moment after the task's row is written (it batches), so the log can number a change after a newer
   * one: another node's, or the current state a stream started from (docs/decisions.md, "Live task events").
   */
  push(event: TaskEvent): void {
    if (this.ended || this.isOlder(event.task)) return;
    this.queue(event);
  }

  private isOlder(task: TaskJson): boolean {
    const last = this.sent.get(task.id);
    const at = Date.parse(task.updated_at);
    // Progress leaves updated_at as it is, so within one state a lower progress is the older event.
    if (last && (at < last.at || (at === last.at && task.status === last.status && task.progress <= last.progress)))
      return true;
    this.sent.set(task.id, { at, status: task.status, progress: task.progress });
    return false;
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
