import { uuidv7 } from '../lib/uuid7.ts';
import { findTask, refreshTaskStatistics } from '../db/repositories/tasks.ts';
import { pendingTaskRow, type NewTaskRow, type TaskRow } from '../db/tasks/row.ts';
import { NotFoundError, UnavailableError } from '../lib/errors.ts';
import { toTaskJson, type TaskJson } from '../lib/task-schema.ts';
import type { Claimer } from './claimer.ts';
import { sleep, type EngineCore } from './core.ts';
import { columnsFor, decide, type TaskEvent } from './machine.ts';
import type { Notices } from './notices.ts';
import type { Outcomes } from './outcomes.ts';
import type { CreateTask } from './types.ts';

/** Creates on this node after which the table's planner statistics are refreshed (at most every 30 s). */
const BURST = 1000;
const STATISTICS_EVERY_MS = 30_000;
/** How long a cancel request waits for a running task to stop before answering. */
const CANCEL_WAIT_MS = 2000;

/** The engine's API: create, read, cancel, retry and delete tasks, each decided by the machine. */
export class Commands {
  private createdSinceStatistics = 0;
  private statisticsAt = 0;

  constructor(
    private readonly core: EngineCore,
    private readonly outcomes: Outcomes,
    private readonly notices: Notices,
    private readonly claimer: Claimer,
  ) {}

  /**
   * Answers the task as created (pending), without reading it back: where this node takes it at once, it was
   * inserted already claimed (`Claimer.createClaimed`) and starts as the answer goes out.
   */
  async create(input: CreateTask): Promise<TaskJson | undefined> {
    const now = new Date();
    const row = this.newRow(input);
    if (input.fireKey) {
      if (!(await this.core.store.insertOnce({ ...row, fire_key: input.fireKey }, now))) return undefined;
    } else if (await this.claimer.createClaimed(row, now)) return this.created([row], now, false)[0];
    else await this.core.store.insert([row], now);
    return this.created([row], now)[0];
  }

  async createMany(inputs: CreateTask[]): Promise<string[]> {
    if (inputs.some((i) => i.fireKey)) throw new Error('createMany does not take fire keys');
    const rows = inputs.map((i) => this.newRow(i));
    const now = new Date();
    await this.core.store.insert(rows, now);
    this.created(rows, now);
    return rows.map((r) => r.id);
  }

  private newRow(input: CreateTask): NewTaskRow {
    if (!input.type || input.type.length > 64) throw new Error('task type must be 1 to 64 characters');
    const maxRetries = input.maxRetries ?? this.core.runners.get(input.type)?.options.maxRetries ?? 0;
    const { payload } = input;
    return {
      id: uuidv7(),
      type: input.type,
      category: input.category ?? (input.creatorId ? 'user' : 'system'),
      payload: payload === undefined ? '{}' : typeof payload === 'string' ? payload : JSON.stringify(payload),
      max_retries: Math.max(0, Math.min(100, Math.trunc(maxRetries))),
      creator_id: input.creatorId ?? null,
      cron_schedule_id: input.cronScheduleId ?? null,
      fire_key: input.fireKey ?? null,
      org_id: input.orgId ?? null,
    };
  }

  /**
   * Bookkeeping of stored creates; answers the created tasks' JSON when anyone needs it. `claimable`: they wait
   * pending, and the nodes are told (not when this node claimed them as it inserted them).
   */
  private created(rows: NewTaskRow[], now: Date, claimable = true): TaskJson[] {
    const { core } = this;
    const at = now.toISOString();
    const tasks: TaskJson[] = [];
    for (const r of rows) {
      core.metrics.created.inc({ type: r.type, category: r.category });
      if (!core.runners.has(r.type) || core.runs.size >= core.limit)
        core.metrics.overflow.inc({ category: r.category });
      if (rows.length === 1 || core.changes.listening) tasks.push(toTaskJson(pendingTaskRow(r, at)));
    }
    for (const task of core.changes.listening ? tasks : []) core.changes.emit(task);
    if (claimable) {
      core.wake();
      this.notices.announce();
    }
    this.createdSinceStatistics += rows.length;
    if (this.createdSinceStatistics >= BURST && Date.now() - this.statisticsAt >= STATISTICS_EVERY_MS) {
      this.createdSinceStatistics = 0;
      this.statisticsAt = Date.now();
      refreshTaskStatistics(core.deps.db).catch((error) =>
        core.logger.warn({ err: error }, 'refreshing task statistics failed'),
      );
    }
    return tasks;
  }

  async get(id: string): Promise<TaskJson | undefined> {
    const row = await findTask(this.core.deps.db, id);
    return row ? toTaskJson(row) : undefined;
  }

  /**
   * Cancels a pending task at once; asks a running one to stop (its signal fires on whichever node runs it) and
   * waits up to two seconds for it to do so. Finished tasks → 400.
   */
  async cancel(id: string): Promise<TaskJson> {
    const { status, row } = await this.request(id, { type: 'CANCEL' });
    if (status === 'cancelled') {
      this.core.metrics.completed.inc({ type: row.type, category: row.category, status: 'cancelled' });
    } else {
      const local = this.core.runs.get(id);
      if (local) this.outcomes.cancelLocal(local);
      else await this.notices.publishCancel();
      await this.settled(id, CANCEL_WAIT_MS);
    }
    return this.mustGet(id);
  }

  async retry(id: string): Promise<TaskJson> {
    await this.request(id, { type: 'RETRY' });
    this.core.wake();
    this.notices.announce();
    return this.mustGet(id);
  }

  async remove(id: string): Promise<void> {
    await this.request(id, { type: 'DELETE' });
  }

  /** A task's log lines from the backend they were written to, oldest first. */
  async logs(id: string, offset: number, limit: number) {
    const row = await findTask(this.core.deps.db, id);
    if (!row) throw new NotFoundError('task.not_found');
    const sink = this.core.sinkFor(row.log_backend);
    return sink ? sink.read(id, offset, limit) : { rows: [], total: 0 };
  }

  private async mustGet(id: string): Promise<TaskJson> {
    const task = await this.get(id);
    if (!task) throw new NotFoundError('task.not_found');
    return task;
  }

  /** Applies an API request through the machine, fenced on the status it was decided for. */
  private async request(id: string, event: TaskEvent): Promise<{ status: TaskRow['status']; row: TaskRow }> {
    const { core } = this;
    for (let attempt = 0; attempt < 5; attempt++) {
      const row = await findTask(core.deps.db, id);
      if (!row) throw new NotFoundError('task.not_found');
      const d = decide(row.status, core.factsOf(row), event);
      const patch = columnsFor(d, { now: new Date().toISOString(), progress: row.progress });
      const [applied] = await core.store.change([{ id, fence: { status: row.status }, patch }]);
      if (applied) {
        // Signalled at once: where the store claims in memory (ClickHouse), a retried task can be claimed and
        // run while its write is still being flushed, and its signals must not come before this one.
        if (d.status !== d.from) core.emit(row, patch);
        // Stored before the request is answered (versioned writes buffer it otherwise).
        await core.store.settle();
        return { status: d.status, row };
      }
    }
    // The row kept changing under us (a task flapping between states); the caller may try again.
    throw new UnavailableError('error.unavailable');
  }

  /** Resolves once the task is no longer running, or after `ms`. */
  private async settled(id: string, ms: number): Promise<void> {
    const local = this.core.runs.get(id);
    if (local) {
      await Promise.race([local.done, sleep(ms)]);
      return;
    }
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      const row = await findTask(this.core.deps.db, id);
      if (!row || row.status !== 'running') return;
      await sleep(50);
    }
  }
}
