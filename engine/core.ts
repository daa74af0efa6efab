import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Registry } from 'prom-client';
import type { ChangeFeed } from '../db/change-feed.ts';
import type { Database } from '../db/database.ts';
import { countPendingTasksByType } from '../db/repositories/tasks.ts';
import type { TaskPatch, TaskRow } from '../db/tasks/row.ts';
import type { TaskStore } from '../db/tasks/store.ts';
import { toTaskJson } from '../lib/task-schema.ts';
import { ArtifactStore } from './artifacts.ts';
import { ChangeWriter } from './change-writer.ts';
import { ClaimedAhead } from './claimed-ahead.ts';
import { TaskChangeEmitter } from './events.ts';
import type { LogSink, LogSinks } from './log-sinks.ts';
import type { TaskFacts } from './machine.ts';
import { createTaskMetrics, type TaskMetrics } from './metrics.ts';
import type { TaskRun } from './run.ts';
import { SETTING_LOG_BACKEND } from './settings.ts';
import type { EngineConfig, EngineLogger, EngineSettings, Runner, RunnerOptions, TaskTracer } from './types.ts';

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

export interface Registration {
  runner: Runner;
  options: RunnerOptions;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/**
 * What the parts of one node's engine share (docs/engine.md "Layout"): its dependencies, runners, runs, pool
 * size and phase, the task store and outcome writer, and the change signal. The parts (commands, claimer,
 * execution, outcomes, leases, notices) each hold it; `wake` and `announce` are wired to the claimer and the
 * notices by the engine.
 */
export class EngineCore {
  readonly workerId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  readonly runners = new Map<string, Registration>();
  /** Runs of this node, by task id: started and not yet finished. */
  readonly runs = new Map<string, TaskRun>();
  /** Tasks this node claimed and has not started yet (claimed ahead of free slots). */
  readonly ahead: ClaimedAhead;
  readonly store: TaskStore;
  readonly writer: ChangeWriter;
  readonly artifacts: ArtifactStore;
  readonly metrics: TaskMetrics;
  readonly changes: TaskChangeEmitter;
  readonly config: EngineConfig;
  readonly logger: EngineLogger;
  limit = 10;
  phase: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  /** Asks the free slots to claim work: there may be new work (the claimer). */
  wake: () => void = () => {};
  /** A run ended: its slot starts a task claimed ahead, and claims while work may be left (the claimer). */
  freed: () => void = () => {};
  /** Tells other nodes there is claimable work (the notices). */
  announce: () => void = () => {};

  constructor(readonly deps: EngineDeps) {
    this.config = deps.config;
    this.ahead = new ClaimedAhead(deps.config.leaseTtlMs);
    this.logger = deps.logger;
    this.store = deps.db.tasks;
    this.changes = new TaskChangeEmitter(deps.logger);
    this.artifacts = new ArtifactStore(deps.db, deps.config.fileUploadPath);
    this.metrics = createTaskMetrics(
      deps.registry,
      () => countPendingTasksByType(deps.db),
      () => this.runners.keys(),
    );
    // Outcome writes in flight at once: half the connection pool, at most 4 (one on SQLite's single connection).
    const depth = Math.max(1, Math.min(4, Math.floor(deps.db.options.maxOpenConnections / 2)));
    this.writer = new ChangeWriter(this.store, deps.logger, depth);
  }

  factsOf(row: TaskRow): TaskFacts {
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

  sinkFor(id: string | null): LogSink | undefined {
    return this.deps.logSinks.get(id ?? this.deps.settings.get<string>(SETTING_LOG_BACKEND));
  }

  /** Signals a stored write: `row` with `patch` applied is the task as it now stands. */
  emit(row: TaskRow, patch?: TaskPatch): void {
    if (this.changes.listening) this.changes.emit(toTaskJson(patch ? Object.assign({}, row, patch) : row));
  }
}
