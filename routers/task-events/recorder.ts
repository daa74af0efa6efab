import type { ChangeFeed } from '../../db/change-feed.ts';
import type { Database } from '../../db/database.ts';
import { appendTaskEvents, pruneTaskEvents, type NewTaskEvent } from '../../db/repositories/task-events.ts';
import type { TaskStatus } from '../../db/repositories/tasks.ts';
import type { TaskChangeEmitter } from '../../engine/events.ts';
import type { EngineLogger, TaskJson } from '../../engine/types.ts';
import { lruCache } from '../../lib/lru.ts';
import { TASK_EVENTS_CHANNEL } from './hub.ts';

/** How long events are kept, so a client that reconnects within it resumes (docs/decisions.md). */
export const TASK_EVENTS_RETENTION_MS = 15 * 60_000;
/** Changes gathered into one insert: one round trip per tick, however many tasks changed. */
const TICK_MS = 50;
/** Progress of one task is recorded at most four times a second; status changes always. */
const PROGRESS_EVERY_MS = 250;
const PRUNE_EVERY_MS = 60_000;
/** Events kept while the database cannot take them; beyond this the oldest are dropped. */
const MAX_QUEUED = 10_000;
/** Tasks whose last status and progress time are remembered. */
const REMEMBERED = 10_000;
const FINAL = new Set<TaskStatus>(['success', 'failed', 'cancelled']);

const eventOf = (task: TaskJson): NewTaskEvent => ({
  task_id: task.id,
  user_id: task.creator_id,
  org_id: task.org_id,
  status: task.status,
  progress: task.progress,
  task: JSON.stringify(task),
});

/**
 * Writes this node's task changes (the engine's change signal) into the events log, then announces them on the
 * change feed so every node's hub reads them. Status changes are all kept, in order; progress is coalesced to the
 * latest, at most `PROGRESS_EVERY_MS` apart per task. Events older than the retention are pruned.
 */
export class TaskEventRecorder {
  private queue: NewTaskEvent[] = [];
  /** Progress not recorded yet, the latest per task. */
  private readonly progress = new Map<string, NewTaskEvent>();
  private readonly statuses = lruCache<string, TaskStatus>(REMEMBERED);
  private readonly progressAt = lruCache<string, number>(REMEMBERED);
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly db: Database,
    private readonly feed: ChangeFeed,
    private readonly logger: EngineLogger,
    private readonly retentionMs: number,
  ) {}

  start(changes: TaskChangeEmitter): void {
    this.unsubscribe = changes.onChange((task) => this.record(task));
    this.pruneTimer = setInterval(() => void this.prune(), PRUNE_EVERY_MS).unref();
  }

  /** Records what is queued, then stops listening. */
  async stop(): Promise<void> {
    this.unsubscribe?.();
    clearInterval(this.pruneTimer);
    await this.flush(true);
  }

  private record(task: TaskJson): void {
    const event = eventOf(task);
    if (task.status === 'running' && this.statuses.get(task.id) === 'running') {
      this.progress.set(task.id, event);
    } else {
      // A status change carries the latest progress itself.
      this.progress.delete(task.id);
      this.queue.push(event);
      if (FINAL.has(task.status)) this.statuses.delete(task.id);
      else this.statuses.set(task.id, task.status);
    }
    this.schedule(TICK_MS);
  }

  private schedule(ms: number): void {
    if (this.timer || this.writing) return;
    this.timer = setTimeout(() => void this.flush(), ms).unref();
  }

  /** Writes the queued events and the progress that is due (all of it, `all`), then announces them. */
  private async flush(all = false): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.writing;
    const now = Date.now();
    const batch = this.queue;
    this.queue = [];
    for (const [id, event] of this.progress) {
      if (!all && now - (this.progressAt.get(id) ?? 0) < PROGRESS_EVERY_MS) continue;
      batch.push(event);
      this.progress.delete(id);
      this.progressAt.set(id, now);
    }
    if (batch.length) {
      this.writing = this.write(batch);
      await this.writing;
      this.writing = undefined;
    }
    if (!all && (this.queue.length || this.progress.size))
      this.schedule(this.queue.length ? TICK_MS : PROGRESS_EVERY_MS);
  }

  private async write(batch: NewTaskEvent[]): Promise<void> {
    try {
      await appendTaskEvents(this.db, batch, new Date());
    } catch (error) {
      this.logger.warn({ err: error, events: batch.length }, 'recording task events failed; trying again');
      this.queue = [...batch, ...this.queue].slice(-MAX_QUEUED);
      await new Promise((r) => setTimeout(r, 1000).unref());
      return;
    }
    await this.feed
      .publish(TASK_EVENTS_CHANNEL)
      .catch((error) => this.logger.warn({ err: error }, 'announcing task events failed'));
  }

  private async prune(): Promise<void> {
    try {
      await pruneTaskEvents(this.db, new Date(Date.now() - this.retentionMs));
    } catch (error) {
      this.logger.warn({ err: error }, 'pruning task events failed');
    }
  }
}
