import type { Actor } from 'xstate';
import type { Database } from '../db/database.ts';
import type { TaskRow } from '../db/repositories/tasks.ts';
import { v7 as uuidv7 } from 'uuid';
import type { ArtifactData, ArtifactStore } from './artifacts.ts';
import type { LogEntry, LogSink } from './log-sinks.ts';
import type { taskMachine } from './machine.ts';
import {
  toTaskJson,
  type EngineLogger,
  type TaskJson,
  type LogLevel,
  type RunnerContext,
  type TaskSpan,
} from './types.ts';

const PROGRESS_EVERY_MS = 250;
const LOGS_EVERY_MS = 200;
const LOGS_BATCH = 100;
const MAX_MESSAGE = 8000;

/** `message k=v k2="v 2"`: fields appended logfmt-style, values quoted when they need it. */
export function formatLogMessage(message: string, fields?: Record<string, unknown>): string {
  let out = message || '(no message)';
  for (const [k, v] of Object.entries(fields ?? {})) {
    const text = typeof v === 'string' ? v : v instanceof Error ? v.message : JSON.stringify(v);
    out += ` ${k}=${/[\s="\\]/.test(text ?? '') ? JSON.stringify(text) : text}`;
  }
  return out.length > MAX_MESSAGE ? `${out.slice(0, MAX_MESSAGE)}…` : out;
}

export interface RunDeps {
  db: Database;
  artifacts: ArtifactStore;
  logger: EngineLogger;
  sink: LogSink | undefined;
  span?: TaskSpan | undefined;
  /** Told of each progress written (the engine's change signal). */
  changed?: (task: TaskJson) => void;
}

/**
 * One claimed task running on this node: its actor, its abort signal, and what the runner reports
 * (progress, log lines, artifacts), written to the database without making the runner wait.
 */
export class TaskRun {
  readonly abort = new AbortController();
  readonly startedAt = performance.now();
  progress = 0;
  /** Another node holds the task now (lease lost), or it was handed back at shutdown: write no outcome. */
  detached = false;
  /** The outcome is being written: lease renewal leaves it alone. */
  finishing = false;
  /** The outcome the machine decided (`retry` for another attempt), for the run's span. */
  outcome: string | undefined;
  done!: Promise<void>;

  private progressTimer: NodeJS.Timeout | undefined;
  private lastProgressWrite = 0;
  private logs: LogEntry[] = [];
  private logTimer: NodeJS.Timeout | undefined;
  private logChain: Promise<void> = Promise.resolve();

  constructor(
    readonly row: TaskRow,
    readonly claimId: string,
    readonly actor: Actor<typeof taskMachine>,
    readonly deps: RunDeps,
  ) {}

  context(): RunnerContext {
    let payload: unknown = this.row.payload;
    try {
      payload = JSON.parse(this.row.payload);
    } catch {
      // Not JSON: the runner gets the string as is.
    }
    const line = (level: LogLevel) => (message: string, fields?: Record<string, unknown>) =>
      this.log(level, message, fields);
    return {
      task: toTaskJson(this.row),
      payload,
      signal: this.abort.signal,
      progress: (n) => this.setProgress(n),
      log: { info: line('info'), warn: line('warn'), error: line('error') },
      artifact: (name, data, contentType) => this.saveArtifact(name, data, contentType),
    };
  }

  setProgress(n: number): void {
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0 || n > 100 || this.detached) return;
    this.progress = Math.round(n);
    if (this.progressTimer) return;
    const wait = Math.max(0, this.lastProgressWrite + PROGRESS_EVERY_MS - Date.now());
    this.progressTimer = setTimeout(() => {
      this.progressTimer = undefined;
      this.lastProgressWrite = Date.now();
      const progress = this.progress;
      this.deps.db.tasks
        .setProgress(this.row.id, this.claimId, progress)
        .then(() => {
          // Once the outcome is being written, it carries the last progress: a late one must not follow it.
          if (!this.finishing && !this.detached) this.deps.changed?.({ ...toTaskJson(this.row), progress });
        })
        .catch((error) =>
          this.deps.logger.warn({ err: error, task_id: this.row.id }, 'task progress could not be written'),
        );
    }, wait);
    this.progressTimer.unref();
  }

  log(level: LogLevel, message: string, fields?: Record<string, unknown>): void {
    if (!this.deps.sink) return;
    const traceId = this.deps.span?.traceId;
    const all = traceId ? { ...fields, trace_id: traceId } : fields;
    this.logs.push({
      id: uuidv7(),
      task_id: this.row.id,
      level,
      message: formatLogMessage(String(message), all),
      created_at: new Date().toISOString(),
    });
    if (this.logs.length >= LOGS_BATCH) void this.flushLogs();
    else this.logTimer ??= setTimeout(() => void this.flushLogs(), LOGS_EVERY_MS).unref();
  }

  /** Writes buffered log lines; lines are written in order, one batch after another. */
  flushLogs(): Promise<void> {
    clearTimeout(this.logTimer);
    this.logTimer = undefined;
    const batch = this.logs;
    this.logs = [];
    if (batch.length && this.deps.sink) {
      const sink = this.deps.sink;
      this.logChain = this.logChain.then(() =>
        sink
          .append(batch)
          .catch((error) =>
            this.deps.logger.warn(
              { err: error, task_id: this.row.id, lines: batch.length },
              'task log lines could not be written',
            ),
          ),
      );
    }
    return this.logChain;
  }

  /** Stops the progress timer; the outcome written next carries the last progress. */
  settle(): void {
    clearTimeout(this.progressTimer);
    this.progressTimer = undefined;
  }

  private async saveArtifact(name: string, data: ArtifactData, contentType: string): Promise<string> {
    const { artifacts, db } = this.deps;
    const file = await artifacts.save({ taskId: this.row.id, ownerId: this.row.creator_id, name, contentType, data });
    await db.tasks.setArtifact(this.row.id, file.key, file.name);
    // A task has one artifact: a later call (or a later attempt) replaces the earlier file.
    const previous = this.row.artifact_file_key ? await artifacts.find(this.row.artifact_file_key) : undefined;
    if (previous) await artifacts.remove([previous]);
    this.row.artifact_file_key = file.key;
    this.row.artifact_file_name = file.name;
    return file.key;
  }
}
