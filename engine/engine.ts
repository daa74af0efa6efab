import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Registry } from 'prom-client';
import { createActor } from 'xstate';
import type { ChangeFeed } from '../db/change-feed.ts';
import type { Database } from '../db/database.ts';
import {
  countPendingTasks,
  findTask,
  pendingTaskRow,
  refreshTaskStatistics,
  type NewTaskRow,
  type TaskChange,
  type TaskPatch,
  type TaskRow,
} from '../db/repositories/tasks.ts';
import { NotFoundError, UnavailableError } from '../lib/errors.ts';
import { v7 as uuidv7 } from 'uuid';
import { ArtifactStore } from './artifacts.ts';
import { ChangeWriter } from './change-writer.ts';
import { TaskChangeEmitter } from './events.ts';
import { LeaseWatch } from './lease-watch.ts';
import type { LogSink, LogSinks } from './log-sinks.ts';
import { decide, snapshotOf, taskMachine, type TaskEvent, type TaskFacts } from './machine.ts';
import { createTaskMetrics, type TaskMetrics } from './metrics.ts';
import { TaskRun } from './run.ts';
import { SETTING_LOG_BACKEND, SETTING_MAX_CONCURRENT } from './settings.ts';
import {
  toTaskJson,
  type CreateTask,
  type EngineConfig,
  type EngineLogger,
  type EngineSettings,
  type Runner,
  type RunnerOptions,
  type TaskJson,
  type TaskTracer,
  type TaskStatus,
} from './types.ts';

/** Change-feed channels: new claimable work somewhere, and a cancel for a task that may run on any node. */
export const TASKS_CHANNEL = 'tasks';
export const TASK_CANCEL_CHANNEL = 'task_cancel';

export interface EngineDeps {
  db: Database;
  feed: ChangeFeed;
  settings: EngineSettings;
  /** The prom-client registry the task metrics go into. */
  registry: Registry;
  logger: EngineLogger;
  config: EngineConfig;
  logSinks: LogSinks;
  /** A span per task run (tracing); none: runs are not traced. */
  tracer?: TaskTracer;
}

interface Registration {
  runner: Runner;
  options: RunnerOptions;
}

const CANCELLED = 'cancelled';
/** Creates on this node after which the table's planner statistics are refreshed (at most every 30 s). */
const BURST = 1000;
const STATISTICS_EVERY_MS = 30_000;
const MAX_ERROR = 4000;
/** How long a cancel request waits for a running task to stop before answering. */
const CANCEL_WAIT_MS = 2000;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message || error.name : String(error);
  return text.length > MAX_ERROR ? `${text.slice(0, MAX_ERROR)}…` : text;
}

/**
 * The stored columns a transition to `status` sets (the machine decided the status and the facts). The one
 * transition into `running`, a claim, is written by the claim statement itself.
 */
function patchFor(
  status: Exclude<TaskStatus, 'running'>,
  facts: TaskFacts,
  o: { now: string; progress: number; result?: string | null; error?: string | null },
): TaskPatch {
  const base = { status, updated_at: o.now, cancel_requested: facts.cancelRequested, retry_count: facts.retryCount };
  switch (status) {
    case 'success':
      return {
        ...base,
        progress: 100,
        result: o.result ?? null,
        error: null,
        finished_at: o.now,
        lease_expires_at: null,
      };
    case 'failed':
      return { ...base, progress: o.progress, error: o.error ?? null, finished_at: o.now, lease_expires_at: null };
    case 'cancelled':
      return { ...base, progress: o.progress, error: CANCELLED, finished_at: o.now, lease_expires_at: null };
    case 'pending':
      return {
        ...base,
        progress: 0,
        result: null,
        error: o.error ?? null,
        started_at: null,
        finished_at: null,
        worker_id: null,
        claim_id: null,
        lease_expires_at: null,
        run_after_ms: facts.retryDelayMs,
      };
  }
}

/** A decided status that is not a claim (claims are decided in bulk by the claim statement). */
function settledStatus(status: TaskStatus): Exclude<TaskStatus, 'running'> {
  if (status === 'running') throw new Error('a running task was decided outside a claim');
  return status;
}

/**
 * The task engine of one node (docs/engine.md). Pending tasks live in the database; a node claims as many as it
 * has free slots (`task_max_concurrent`), runs each as an actor of the task machine, renews their leases,
 * and writes their outcome. Any node may create, cancel or retry any task; the change feed tells the others.
 */
export class TaskEngine {
  readonly workerId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  readonly logSinks: LogSinks;
  readonly artifacts: ArtifactStore;
  readonly metrics: TaskMetrics;
  /** Every task change this node wrote, after it committed (engine/events.ts). */
  readonly changes: TaskChangeEmitter;

  private readonly db: Database;
  private readonly config: EngineConfig;
  private readonly logger: EngineLogger;
  private readonly runners = new Map<string, Registration>();
  private readonly runs = new Map<string, TaskRun>();
  private readonly writer: ChangeWriter;
  private readonly leases: LeaseWatch;
  private renewing = false;
  private limit = 10;
  private phase: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  private claiming = false;
  private wakes = 0;
  private pumpScheduled = false;
  private timers: NodeJS.Timeout[] = [];
  private announceTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private stopping: Promise<void> | undefined;
  private createdSinceStatistics = 0;
  private statisticsAt = 0;

  constructor(private readonly deps: EngineDeps) {
    this.db = deps.db;
    this.config = deps.config;
    this.logger = deps.logger;
    this.logSinks = deps.logSinks;
    this.changes = new TaskChangeEmitter(deps.logger);
    this.artifacts = new ArtifactStore(deps.db, deps.config.fileUploadPath);
    this.metrics = createTaskMetrics(deps.registry, () => countPendingTasks(deps.db));
    // Outcome writes in flight at once: half the connection pool, at most 4 (one on SQLite's single connection).
    this.writer = new ChangeWriter(
      deps.db,
      deps.logger,
      Math.max(1, Math.min(4, Math.floor(deps.db.options.maxOpenConnections / 2))),
    );
    // Renewals failing (the database down) must stop a run before another node's reaper may take its task.
    this.leases = new LeaseWatch(deps.config.leaseTtlMs, (run) => {
      if (!run.finishing) this.detach(run, 'lease could not be renewed');
    });
    deps.settings.onChange((key, value) => {
      if (key !== SETTING_MAX_CONCURRENT) return;
      this.limit = value as number;
      this.logger.info({ limit: this.limit }, 'task pool resized');
      this.wake();
    });
  }

  /** Runs tasks of `type` on this node. Registering late is fine: waiting tasks of the type are picked up. */
  register(type: string, runner: Runner, options: RunnerOptions = {}): void {
    if (!type || type.length > 64) throw new Error('task type must be 1 to 64 characters');
    this.runners.set(type, { runner, options });
    this.wake();
  }

  registeredTypes(): string[] {
    return [...this.runners.keys()];
  }

  /** The number of tasks this node runs at most at once (the `task_max_concurrent` setting). */
  get concurrency(): number {
    return this.limit;
  }

  async start(): Promise<void> {
    if (this.phase !== 'new') return;
    this.limit = this.deps.settings.get<number>(SETTING_MAX_CONCURRENT);
    this.phase = 'running';
    this.unsubscribe = this.deps.feed.subscribe((channel) => {
      if (channel === TASKS_CHANNEL) this.wake();
      else if (channel === TASK_CANCEL_CHANNEL) void this.checkCancels();
    });
    const every = (ms: number, fn: () => unknown) => this.timers.push(setInterval(fn, ms).unref());
    // The fallback for wake-ups that never arrive (another node's notice lost, a retry backoff ending elsewhere).
    every(this.config.pollIntervalMs, () => this.wake());
    every(this.config.leaseRenewIntervalMs, () => void this.renew());
    every(this.config.reaperIntervalMs, () => void this.reap());
    await this.reap();
    this.wake();
  }

  /**
   * Graceful stop: claims nothing more, lets running tasks finish within `timeoutMs`, then hands the rest back
   * to pending (their signal fires) so another node, or this one after a restart, runs them again.
   */
  stop(timeoutMs = this.config.shutdownTimeoutMs): Promise<void> {
    this.stopping ??= this.shutdown(timeoutMs);
    return this.stopping;
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    if (this.phase !== 'running') {
      this.phase = 'stopped';
      return;
    }
    this.phase = 'stopping';
    const allDone = () => Promise.all([...this.runs.values()].map((r) => r.done));
    await Promise.race([allDone(), sleep(timeoutMs)]);
    const left = [...this.runs.values()].filter((r) => !r.detached && !r.finishing);
    await Promise.all(left.map((run) => this.handBack(run)));
    if (left.length) await Promise.race([allDone(), sleep(1000)]);
    await this.writer.drain();
    await this.db.tasks
      .settle()
      .catch((error) => this.logger.error({ err: error }, 'storing task changes at stop failed'));
    for (const t of this.timers) clearInterval(t);
    clearTimeout(this.announceTimer);
    this.unsubscribe?.();
    this.phase = 'stopped';
  }

  async create(input: CreateTask): Promise<TaskJson | undefined> {
    const now = new Date();
    const row = this.newRow(input);
    if (input.fireKey) {
      if (!(await this.db.tasks.insertOnce({ ...row, fire_key: input.fireKey }, now))) return undefined;
    } else await this.db.tasks.insert([row], now);
    this.created([row], now);
    // Answered as inserted, without reading it back.
    return toTaskJson(pendingTaskRow(row, now.toISOString()));
  }

  /** Creates many tasks with few round trips (for bulk work); answers their ids in order. */
  async createMany(inputs: CreateTask[]): Promise<string[]> {
    if (inputs.some((i) => i.fireKey)) throw new Error('createMany does not take fire keys');
    const rows = inputs.map((i) => this.newRow(i));
    const now = new Date();
    await this.db.tasks.insert(rows, now);
    this.created(rows, now);
    return rows.map((r) => r.id);
  }

  private newRow(input: CreateTask): NewTaskRow & { creator_id: string | null } {
    if (!input.type || input.type.length > 64) throw new Error('task type must be 1 to 64 characters');
    const maxRetries = input.maxRetries ?? this.runners.get(input.type)?.options.maxRetries ?? 0;
    return {
      id: uuidv7(),
      type: input.type,
      category: input.category ?? (input.creatorId ? 'user' : 'system'),
      payload:
        input.payload === undefined
          ? '{}'
          : typeof input.payload === 'string'
            ? input.payload
            : JSON.stringify(input.payload),
      max_retries: Math.max(0, Math.min(100, Math.trunc(maxRetries))),
      creator_id: input.creatorId ?? null,
      cron_schedule_id: input.cronScheduleId ?? null,
      fire_key: input.fireKey ?? null,
      org_id: input.orgId ?? null,
    };
  }

  private created(rows: NewTaskRow[], now: Date): void {
    for (const r of rows) {
      this.changes.emit(toTaskJson(pendingTaskRow(r, now.toISOString())));
      this.metrics.created.inc({ type: r.type, category: r.category });
      if (!this.runners.has(r.type) || this.runs.size >= this.limit)
        this.metrics.overflow.inc({ category: r.category });
    }
    this.wake();
    this.announce();
    this.createdSinceStatistics += rows.length;
    if (this.createdSinceStatistics >= BURST && Date.now() - this.statisticsAt >= STATISTICS_EVERY_MS) {
      this.createdSinceStatistics = 0;
      this.statisticsAt = Date.now();
      refreshTaskStatistics(this.db).catch((error) =>
        this.logger.warn({ err: error }, 'refreshing task statistics failed'),
      );
    }
  }

  async get(id: string): Promise<TaskJson | undefined> {
    const row = await findTask(this.db, id);
    return row ? toTaskJson(row) : undefined;
  }

  /**
   * Cancels a pending task at once; asks a running one to stop (its signal fires on whichever node runs it) and
   * waits up to two seconds for it to do so. Finished tasks → 400.
   */
  async cancel(id: string): Promise<TaskJson> {
    const decision = await this.request(id, { type: 'CANCEL' });
    if (decision.status === 'cancelled') {
      this.metrics.completed.inc({ type: decision.row.type, category: decision.row.category, status: 'cancelled' });
    } else {
      const local = this.runs.get(id);
      if (local) this.cancelLocal(local);
      else await this.deps.feed.publish(TASK_CANCEL_CHANNEL);
      await this.settled(id, CANCEL_WAIT_MS);
    }
    return this.mustGet(id);
  }

  /** Runs a failed or cancelled task again (retry count reset). */
  async retry(id: string): Promise<TaskJson> {
    await this.request(id, { type: 'RETRY' });
    this.wake();
    this.announce();
    return this.mustGet(id);
  }

  /** Soft delete; a running task must be cancelled first. */
  async remove(id: string): Promise<void> {
    await this.request(id, { type: 'DELETE' });
  }

  /** A task's log lines from the backend they were written to, oldest first. */
  async logs(id: string, offset: number, limit: number) {
    const row = await findTask(this.db, id);
    if (!row) throw new NotFoundError('task.not_found');
    const sink = this.sinkFor(row.log_backend);
    return sink ? sink.read(id, offset, limit) : { rows: [], total: 0 };
  }

  private sinkFor(id: string | null): LogSink | undefined {
    return this.logSinks.get(id ?? this.deps.settings.get<string>(SETTING_LOG_BACKEND));
  }

  private async mustGet(id: string): Promise<TaskJson> {
    const task = await this.get(id);
    if (!task) throw new NotFoundError('task.not_found');
    return task;
  }

  /** Applies an API request through the machine, fenced on the status it was decided for. */
  private async request(id: string, event: TaskEvent) {
    for (let attempt = 0; attempt < 5; attempt++) {
      const row = await findTask(this.db, id);
      if (!row) throw new NotFoundError('task.not_found');
      const d = decide(row.status, this.factsOf(row), event);
      const now = new Date().toISOString();
      const patch: TaskPatch =
        d.status === d.from
          ? { cancel_requested: d.facts.cancelRequested, updated_at: now }
          : patchFor(settledStatus(d.status), d.facts, { now, progress: row.progress });
      if (d.facts.deleted) patch.deleted_at = now;
      if (await this.changeOne({ id, fence: { status: row.status }, patch })) {
        // Stored before the request is answered (versioned writes buffer it otherwise).
        await this.db.tasks.settle();
        if (d.status !== d.from) this.changes.emit(toTaskJson({ ...row, ...patch }));
        return { ...d, row };
      }
    }
    // The row kept changing under us (a task flapping between states); the caller may try again.
    throw new UnavailableError('error.unavailable');
  }

  private async changeOne(change: TaskChange): Promise<boolean> {
    const [applied] = await this.db.tasks.change([change]);
    return applied!;
  }

  private factsOf(row: TaskRow): TaskFacts {
    return {
      retryCount: row.retry_count,
      maxRetries: row.max_retries,
      cancelRequested: row.cancel_requested,
      deleted: row.deleted_at !== null,
      backoffBaseMs: this.config.retryBackoffBaseMs,
      backoffMaxMs: this.config.retryBackoffMaxMs,
      retryDelayMs: 0,
    };
  }

  /** Resolves once the task is no longer running, or after `ms`. */
  private async settled(id: string, ms: number): Promise<void> {
    const local = this.runs.get(id);
    if (local) {
      await Promise.race([local.done, sleep(ms)]);
      return;
    }
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      const row = await findTask(this.db, id);
      if (!row || row.status !== 'running') return;
      await sleep(50);
    }
  }

  /**
   * Asks this node's free slots to claim work now. Wake-ups within one turn of the event loop (a batch of
   * finished runs) make one pass.
   */
  private wake(): void {
    if (this.phase !== 'running') return;
    this.wakes++;
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  /**
   * Claims tasks for every free slot, one claim at a time: concurrent claims of one node would only contend
   * for the same rows (measured slower on PostgreSQL), while outcome writes do overlap with the claim.
   */
  private pump(): void {
    if (this.claiming || this.phase !== 'running') return;
    const free = this.limit - this.runs.size;
    const types = this.registeredTypes();
    if (free > 0 && types.length) void this.claim(types, free);
  }

  private async claim(types: string[], limit: number): Promise<void> {
    this.claiming = true;
    const wakesBefore = this.wakes;
    let rows: TaskRow[] = [];
    const sentAt = performance.now();
    try {
      const now = new Date().toISOString();
      rows = await this.db.tasks.claim({
        workerId: this.workerId,
        claimId: randomUUID(),
        types,
        limit,
        leaseMs: this.config.leaseTtlMs,
        patch: {
          status: 'running',
          started_at: now,
          updated_at: now,
          progress: 0,
          log_backend: this.deps.settings.get<string>(SETTING_LOG_BACKEND),
        },
      });
    } catch (error) {
      if (this.phase === 'running')
        this.logger.warn({ err: error }, 'claiming tasks failed; trying again at the next poll');
    } finally {
      this.claiming = false;
    }
    for (const row of rows) {
      this.changes.emit(toTaskJson(row));
      this.launch(row, sentAt);
    }
    // A full claim may have left more behind, and a wake-up during the claim may concern a task it missed.
    if (rows.length === limit || this.wakes !== wakesBefore) this.wake();
  }

  /**
   * Starts an actor for a task this node just claimed (by a statement sent at `sentAt`): the machine takes the
   * claim, then the runner runs.
   */
  private launch(row: TaskRow, sentAt: number): void {
    const registration = this.runners.get(row.type);
    const facts = this.factsOf(row);
    const actor = createActor(taskMachine, { input: facts, snapshot: snapshotOf('pending', facts) }).start();
    actor.send({ type: 'CLAIM' });
    const span = this.deps.tracer?.startRun({
      id: row.id,
      type: row.type,
      category: row.category,
      attempt: row.retry_count + 1,
    });
    const run = new TaskRun(row, row.claim_id!, actor, {
      db: this.db,
      artifacts: this.artifacts,
      logger: this.logger,
      sink: this.sinkFor(row.log_backend),
      span,
      changed: (task) => this.changes.emit(task),
    });
    this.runs.set(row.id, run);
    this.leases.held(run, sentAt);
    this.metrics.started.inc({ type: row.type, category: row.category });
    this.metrics.running.inc({ type: row.type });
    run.done = span
      ? span.within(() => this.execute(run, registration!.runner))
      : this.execute(run, registration!.runner);
  }

  private async execute(run: TaskRun, runner: Runner): Promise<void> {
    let event: TaskEvent;
    let result: string | null = null;
    let error: string | null = null;
    try {
      const value = await runner(run.context());
      result = value === undefined ? null : (JSON.stringify(value) ?? null);
      event = { type: 'SUCCEED' };
    } catch (e) {
      error = errorText(e);
      event = { type: 'FAIL' };
    }
    let outcome: Promise<void> | undefined;
    try {
      run.settle();
      if (!run.detached) outcome = (await this.finish(run, event, result, error)).written;
      else await run.flushLogs();
    } catch (e) {
      this.logger.error({ err: e, task_id: run.row.id }, 'finishing a task failed');
    } finally {
      // The slot frees once the outcome is queued: the runner is done, and the row follows within milliseconds.
      // Claiming the next tasks meanwhile overlaps the two round trips.
      run.actor.stop();
      this.runs.delete(run.row.id);
      this.leases.forget(run);
      this.metrics.running.dec({ type: run.row.type });
      run.deps.span?.end(run.detached ? 'detached' : (run.outcome ?? 'unknown'), error);
      this.wake();
    }
    await outcome;
  }

  /** Decides the outcome through the actor and queues its write; answers the bookkeeping done once it is written. */
  private async finish(
    run: TaskRun,
    event: TaskEvent,
    result: string | null,
    error: string | null,
  ): Promise<{ written: Promise<void> }> {
    run.finishing = true;
    const before = run.actor.getSnapshot().context;
    run.actor.send(event);
    const { value, context: facts } = run.actor.getSnapshot();
    const status = value as TaskStatus;
    run.outcome = status === 'pending' ? 'retry' : status;
    const { row } = run;
    if (status === 'pending')
      run.log('warn', `attempt failed, retrying in ${facts.retryDelayMs} ms`, {
        error,
        retry: facts.retryCount,
        max_retries: facts.maxRetries,
      });
    else if (status === 'failed') run.log('error', 'task failed', { error });
    else if (status === 'cancelled') run.log('warn', 'task cancelled');
    await run.flushLogs();
    const seconds = (performance.now() - run.startedAt) / 1000;
    const written = this.writeOutcome(run, event, before, { status, facts }, { result, error }).then((d) => {
      if (!d) {
        this.logger.warn({ task_id: row.id }, 'task was taken over by another node; this run’s outcome is dropped');
        return;
      }
      this.metrics.duration.observe({ type: row.type, status: d.status === 'pending' ? 'retry' : d.status }, seconds);
      if (d.status !== 'pending') {
        this.metrics.completed.inc({ type: row.type, category: row.category, status: d.status });
        return;
      }
      setTimeout(() => this.wake(), d.facts.retryDelayMs + 5).unref();
      this.announce();
    });
    return { written };
  }

  /**
   * Writes the run's outcome as the machine decided it from `before` and `event`, fenced on the claim and on the
   * cancel flag the run knew of. A cancel accepted meanwhile (on any node, the run not told yet) refuses the
   * write; the outcome is then decided again with the cancel, so a cancel answered 200 always ends the task
   * `cancelled`. A run ending cancelled leaves no artifact. Answers the decision written, or nothing when
   * another node holds the task.
   */
  private async writeOutcome(
    run: TaskRun,
    event: TaskEvent,
    before: TaskFacts,
    decided: { status: TaskStatus; facts: TaskFacts },
    o: { result?: string | null; error?: string | null },
  ): Promise<{ status: TaskStatus; facts: TaskFacts } | undefined> {
    let d = decided;
    for (;;) {
      const patch = patchFor(settledStatus(d.status), d.facts, {
        now: new Date().toISOString(),
        progress: run.progress,
        ...o,
      });
      // A cancel is stored before the machine hears of it, so the task ends cancelled whoever writes it: the file
      // goes first, and a task seen cancelled has none.
      const artifact = d.status === 'cancelled' ? run.row.artifact_file_key : null;
      if (artifact) {
        await this.removeArtifact(artifact, run.row.id);
        Object.assign(patch, { artifact_file_key: null, artifact_file_name: null });
      }
      const fence = { status: 'running' as const, claimId: run.claimId, cancelRequested: d.facts.cancelRequested };
      if (await this.writer.write({ id: run.row.id, fence, patch })) {
        this.changes.emit(toTaskJson({ ...run.row, ...patch }));
        return d;
      }
      if (d.facts.cancelRequested || !(await this.cancelledUnderClaim(run))) return undefined;
      d = decide('running', { ...before, cancelRequested: true }, event);
      run.outcome = d.status === 'pending' ? 'retry' : d.status;
      run.log(
        'warn',
        'task cancelled: the cancel was accepted before the runner returned, so its outcome is discarded',
      );
      await run.flushLogs();
    }
  }

  /**
   * Whether the run still holds its task and a cancel was stored for it. Unknown (no database) counts as no: the
   * task then stays running until its lease expires, and the reaper ends it cancelled.
   */
  private async cancelledUnderClaim(run: TaskRun): Promise<boolean> {
    try {
      const [now] = await this.db.tasks.held([run.row.id]);
      return now?.status === 'running' && now.claim_id === run.claimId && now.cancel_requested;
    } catch (error) {
      this.logger.warn(
        { err: error, task_id: run.row.id },
        'reading whether a task was cancelled failed; its lease will decide',
      );
      return false;
    }
  }

  private async removeArtifact(key: string, taskId: string): Promise<void> {
    try {
      const file = await this.artifacts.find(key);
      if (file) await this.artifacts.remove([file]);
    } catch (error) {
      this.logger.warn({ err: error, task_id: taskId }, 'the artifact of a cancelled task could not be removed');
    }
  }

  private cancelLocal(run: TaskRun): void {
    run.actor.send({ type: 'CANCEL' });
    if (run.actor.getSnapshot().context.cancelRequested && !run.abort.signal.aborted) {
      run.abort.abort(Object.assign(new Error(CANCELLED), { name: 'AbortError' }));
    }
  }

  /** This node no longer owns the run: stop the runner and write nothing for it. */
  private detach(run: TaskRun, reason: string): void {
    if (run.detached) return;
    run.detached = true;
    this.logger.warn({ task_id: run.row.id, reason }, 'task run detached');
    run.abort.abort(Object.assign(new Error(reason), { name: 'AbortError' }));
  }

  private async handBack(run: TaskRun): Promise<void> {
    const before = run.actor.getSnapshot().context;
    run.actor.send({ type: 'RELEASE' });
    const { value, context: facts } = run.actor.getSnapshot();
    this.detach(run, 'node shutting down');
    run.log(
      'warn',
      value === 'pending' ? 'node shut down before the task finished; it will run again' : 'task cancelled',
    );
    await run.flushLogs();
    await this.writeOutcome(run, { type: 'RELEASE' }, before, { status: value as TaskStatus, facts }, {});
  }

  private async checkCancels(): Promise<void> {
    const runs = [...this.runs.values()].filter((r) => !r.detached);
    if (!runs.length) return;
    try {
      for (const held of await this.db.tasks.held(
        runs.map((r) => r.row.id),
        true,
      )) {
        const run = this.runs.get(held.id);
        if (run && held.claim_id === run.claimId) this.cancelLocal(run);
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'checking for cancelled tasks failed');
    }
  }

  /**
   * Extends the leases of this node's runs; a run whose row another node holds now is detached. A run whose
   * lease cannot be renewed is stopped by the lease watch, not here: a renewal may hang as long as it fails.
   */
  private async renew(): Promise<void> {
    const runs = [...this.runs.values()].filter((r) => !r.detached && !r.finishing);
    if (!runs.length || this.renewing) return;
    this.renewing = true;
    const sentAt = performance.now();
    try {
      const held = new Map(
        (
          await this.db.tasks.renew(
            this.workerId,
            runs.map((r) => r.row.id),
            this.config.leaseTtlMs,
          )
        ).map((h) => [h.id, h]),
      );
      for (const run of runs) {
        const h = held.get(run.row.id);
        if (run.finishing || run.detached) continue;
        if (!h || h.status !== 'running' || h.claim_id !== run.claimId) this.detach(run, 'lease lost');
        else {
          this.leases.held(run, sentAt);
          if (h.cancel_requested) this.cancelLocal(run);
        }
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'renewing task leases failed');
    } finally {
      this.renewing = false;
    }
  }

  /** Returns tasks whose lease ran out (their node died) to pending, through the machine's EXPIRE. */
  private async reap(): Promise<void> {
    try {
      let reaped = 0;
      for (const row of await this.db.tasks.expired(100)) {
        // Our own live run: its renewal is only late; renewal decides whether it still holds the task.
        if (this.runs.get(row.id)?.claimId === row.claim_id) continue;
        const d = decide('running', this.factsOf(row), { type: 'EXPIRE' });
        const now = new Date().toISOString();
        const patch = patchFor(settledStatus(d.status), d.facts, { now, progress: row.progress });
        const fence = {
          status: 'running' as const,
          claimId: row.claim_id,
          leaseExpired: true,
          cancelRequested: row.cancel_requested,
        };
        if (!(await this.changeOne({ id: row.id, fence, patch }))) continue;
        this.changes.emit(toTaskJson({ ...row, ...patch }));
        reaped++;
        this.logger.warn(
          { task_id: row.id, worker_id: row.worker_id, status: d.status },
          'task lease expired; its node stopped renewing it',
        );
        await this.sinkFor(row.log_backend)
          ?.append([
            {
              id: uuidv7(),
              task_id: row.id,
              level: 'warn',
              message: `node ${row.worker_id ?? '?'} stopped renewing the lease; task ${d.status === 'pending' ? 'will run again' : 'cancelled'}`,
              created_at: now,
            },
          ])
          .catch(() => {});
      }
      if (reaped) {
        this.wake();
        this.announce();
      }
    } catch (error) {
      if (this.phase === 'running') this.logger.warn({ err: error }, 'reaping expired task leases failed');
    }
  }

  /** Tells other nodes there is claimable work; coalesced so a burst of creates costs one notice. */
  private announce(): void {
    if (this.announceTimer || this.phase === 'stopped') return;
    this.announceTimer = setTimeout(() => {
      this.announceTimer = undefined;
      this.deps.feed
        .publish(TASKS_CHANNEL)
        .catch((error) => this.logger.warn({ err: error }, 'announcing new tasks failed'));
    }, 20);
    this.announceTimer.unref();
  }

  /** For tests and tools: a task the engine is running here. */
  isRunningHere(id: string): boolean {
    return this.runs.has(id);
  }
}
