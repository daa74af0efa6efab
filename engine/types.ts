import type { Readable } from 'node:stream';
import type { TaskCategory, TaskJson } from '../lib/task-schema.ts';

export { toTaskJson, type TaskCategory, type TaskJson, type TaskStatus } from '../lib/task-schema.ts';

export type LogLevel = 'info' | 'warn' | 'error';

export interface TaskLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** What a runner gets (the runner contract of docs/engine.md). */
export interface RunnerContext {
  /** The task as it was when this run started. */
  readonly task: TaskJson;
  /** The payload parsed as JSON, or the raw string when it is not JSON. */
  readonly payload: unknown;
  /** Aborted when the task is cancelled (from any node), when this node shuts down, or when it lost the task's lease. */
  readonly signal: AbortSignal;
  /** Reports progress, 0 to 100; other values are ignored. */
  progress(percent: number): void;
  /** Lines captured into the task's log backend. */
  readonly log: TaskLogger;
  /** Stores a downloadable file as the task's artifact; returns its file key. */
  artifact(
    name: string,
    data: Buffer | string | Readable | AsyncIterable<Buffer | string>,
    contentType: string,
  ): Promise<string>;
}

/** Returns the task's result (JSON-encoded into `result`); throws to fail. */
export type Runner = (ctx: RunnerContext) => Promise<unknown>;

export interface RunnerOptions {
  /** Automatic retries for tasks of this type created without their own `maxRetries` (default 0). */
  maxRetries?: number;
}

export interface CreateTask {
  type: string;
  /** A string is stored as is; anything else as its JSON. */
  payload?: unknown;
  category?: TaskCategory;
  creatorId?: string | null;
  maxRetries?: number;
  orgId?: string | null;
  cronScheduleId?: string | null;
  /** One task per key ever: a second create with the same key creates nothing and answers undefined. */
  fireKey?: string;
}

/** The settings the engine reads; the console's settings service provides them. */
export interface EngineSettings {
  get<T>(key: string): T;
  onChange(handler: (key: string, value: unknown) => void): void;
}

export interface EngineLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** The `task.*` configuration keys (milliseconds) and where files go. */
export interface EngineConfig {
  leaseTtlMs: number;
  leaseRenewIntervalMs: number;
  /** The fraction of the lease after which a run whose renewals fail is aborted (`task.lease_abort_at`). */
  leaseAbortAt: number;
  reaperIntervalMs: number;
  pollIntervalMs: number;
  retryBackoffBaseMs: number;
  retryBackoffMaxMs: number;
  /** `server.file_upload_path`: artifacts and file-backend logs (shared storage when several nodes run). */
  fileUploadPath: string;
  /** How long `stop()` lets running tasks finish before handing them back. */
  shutdownTimeoutMs: number;
}

/** A span around one task run, supplied by the caller's tracing (engine/ knows nothing of it). */
export interface TaskSpan {
  /** The run's trace id, exported or not: task log lines carry it. */
  readonly traceId: string | undefined;
  /** Runs `fn` with the span active, so the runner's database queries and log lines belong to it. */
  within<T>(fn: () => T): T;
  end(outcome: string, error?: string | null): void;
}

export interface TaskTracer {
  startRun(task: { id: string; type: string; category: string; attempt: number }): TaskSpan;
}
