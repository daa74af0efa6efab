import { uuidv7 } from '../lib/uuid7.ts';
import type { TaskRow } from '../db/tasks/row.ts';
import type { ArtifactData, ArtifactStore } from './artifacts.ts';
import type { LogEntry, LogSink } from './log-sinks.ts';
import type { TaskFacts } from './machine.ts';
import {
  toTaskJson,
  type EngineLogger,
  type LogLevel,
  type RunnerContext,
  type TaskJson,
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

/** The payload parsed as JSON, or the raw string when it is not JSON. */
function parsePayload(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The writes of a running task's row, made through the engine and fenced on the run's claim. */
export interface RunWrites {
  progress(run: TaskRun): Promise<void>;
  /** Makes the stored file the task's artifact; false: the run no longer holds the task. */
  artifact(run: TaskRun, fileKey: string, fileName: string): Promise<boolean>;
  /** Whether the run still holds its task: log lines of a run that lost it are not stored. */
  holds(run: TaskRun): Promise<boolean>;
  /** The run's log lines were stored. */
  logged(run: TaskRun): void;
}

export interface RunDeps {
  writes: RunWrites;
  artifacts: ArtifactStore;
  logger: EngineLogger;
  sink: LogSink | undefined;
  span?: TaskSpan | undefined;
}

/**
 * One claimed task running on this node: the machine's facts for it, its abort signal, and what the runner
 * reports (progress, log lines, artifacts), written without making the runner wait.
 */
export class TaskRun {
  readonly abort = new AbortController();
  readonly startedAt = performance.now();
  progress = 0;
  /** Another node holds the task now (lease lost), or it was handed back at shutdown: write no outcome. */
  detached = false;
  /** The run no longer holds its task: nothing more of it is stored (log lines included). */
  lost = false;
  /** The outcome is being written: lease renewal leaves it alone. */
  finishing = false;
  /** The outcome the machine decided (`retry` for another attempt), for the run's span. */
  outcome: string | undefined;
  done!: Promise<void>;

  private startTask: TaskJson | undefined;
  private progressTimer: NodeJS.Timeout | undefined;
  private lastProgressWrite = 0;
  /** When the run last signalled that it stored log lines (Date.now()). */
  lastLogSignal = 0;
  private logs: LogEntry[] = [];
  private logTimer: NodeJS.Timeout | undefined;
  private logChain: Promise<void> = Promise.resolve();

  constructor(
    readonly row: TaskRow,
    readonly claimId: string,
    /** The machine's facts as this run knows them (a cancel heard of sets cancelRequested). */
    public facts: TaskFacts,
    readonly deps: RunDeps,
  ) {}

  /**
   * The runner's view of the run. Its task JSON, parsed payload, signal and logger are built when first read: a
   * short runner that reads none of them (the common no-op or fire-and-forget job) does not pay for them.
   */
  context(): RunnerContext {
    const run = this;
    let payload: { value: unknown } | undefined;
    let log: RunnerContext['log'] | undefined;
    return {
      get task() {
        return run.taskAtStart();
      },
      get payload() {
        payload ??= { value: parsePayload(run.row.payload) };
        return payload.value;
      },
      get signal() {
        return run.abort.signal;
      },
      get log() {
        const line = (level: LogLevel) => (message: string, fields?: Record<string, unknown>) =>
          run.log(level, message, fields);
        return (log ??= { info: line('info'), warn: line('warn'), error: line('error') });
      },
      progress: (n) => this.setProgress(n),
      artifact: (name, data, contentType) => this.saveArtifact(name, data, contentType),
    };
  }

  /** The task JSON as this run started it (taken before the run's own writes change the row). */
  private taskAtStart(): TaskJson {
    return (this.startTask ??= toTaskJson(this.row));
  }

  setProgress(n: number): void {
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0 || n > 100 || this.detached) return;
    this.progress = Math.round(n);
    if (this.progressTimer) return;
    const wait = Math.max(0, this.lastProgressWrite + PROGRESS_EVERY_MS - Date.now());
    this.progressTimer = setTimeout(() => {
      this.progressTimer = undefined;
      this.lastProgressWrite = Date.now();
      // The lines logged before this progress are stored before its change is signalled: a reader that reads the
      // log again on each change (the console's task page) sees them with it.
      this.flushLogs()
        .then(() => this.deps.writes.progress(this))
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
      this.logChain = this.logChain.then(async () => {
        try {
          if (this.lost || !(await this.deps.writes.holds(this))) this.lost = true;
          else {
            await sink.append(batch);
            this.deps.writes.logged(this);
          }
        } catch (error) {
          this.deps.logger.warn(
            { err: error, task_id: this.row.id, lines: batch.length },
            'task log lines could not be written',
          );
        }
      });
    }
    return this.logChain;
  }

  /** Stops the progress timer; the outcome written next carries the last progress. */
  settle(): void {
    clearTimeout(this.progressTimer);
    this.progressTimer = undefined;
  }

  private async saveArtifact(name: string, data: ArtifactData, contentType: string): Promise<string> {
    const { artifacts, writes } = this.deps;
    const file = await artifacts.save({ taskId: this.row.id, ownerId: this.row.creator_id, name, contentType, data });
    if (!(await writes.artifact(this, file.key, file.name))) {
      await artifacts.remove([file]);
      throw Object.assign(new Error('the task is no longer held by this run'), { name: 'AbortError' });
    }
    // A task has one artifact: a later call (or a later attempt) replaces the earlier file.
    this.taskAtStart();
    const previous = this.row.artifact_file_key ? await artifacts.find(this.row.artifact_file_key) : undefined;
    if (previous) await artifacts.remove([previous]);
    this.row.artifact_file_key = file.key;
    this.row.artifact_file_name = file.name;
    return file.key;
  }
}
