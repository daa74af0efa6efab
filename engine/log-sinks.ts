import { appendFile, mkdir, readdir, readFile, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Database } from '../db/database.ts';
import {
  deleteTaskLogsBefore,
  deleteTaskLogsOf,
  insertTaskLogs,
  listTaskLogs,
  type TaskLogRow,
} from '../db/repositories/task-logs.ts';

export type LogEntry = TaskLogRow;

/** Where runner log lines go (setting `task_log_storage_backend`). Every sink answers reads in the same shape. */
export interface LogSink {
  readonly id: string;
  readonly name: string;
  append(entries: LogEntry[]): Promise<void>;
  /** One task's entries, oldest first. */
  read(taskId: string, offset: number, limit: number): Promise<{ rows: LogEntry[]; total: number }>;
  deleteOf(taskIds: string[]): Promise<void>;
  /** Drops entries older than `before`; answers how many (or how many files) went. */
  deleteBefore(before: Date): Promise<number>;
}

export class DatabaseLogSink implements LogSink {
  readonly id = 'database';
  readonly name = 'Database';
  constructor(private readonly db: Database) {}
  append(entries: LogEntry[]) {
    return insertTaskLogs(this.db, entries);
  }
  read(taskId: string, offset: number, limit: number) {
    return listTaskLogs(this.db, taskId, offset, limit);
  }
  async deleteOf(taskIds: string[]) {
    await deleteTaskLogsOf(this.db, taskIds);
  }
  deleteBefore(before: Date) {
    return deleteTaskLogsBefore(this.db, before);
  }
}

/**
 * One JSON-lines file per task under `<server.file_upload_path>/task-logs/`. That folder (not `log.path`) so
 * every node reads what another node's runner wrote: multi-node deployments put it on shared storage.
 */
export class FileLogSink implements LogSink {
  readonly id = 'file';
  readonly name = 'File';
  private readonly dir: string;
  private ready?: Promise<unknown>;

  constructor(fileUploadPath: string) {
    this.dir = join(fileUploadPath, 'task-logs');
  }

  private file(taskId: string): string {
    // Task ids are UUIDs; refuse anything else rather than build a path from it.
    if (!/^[0-9a-f-]{36}$/i.test(taskId)) throw new Error('bad task id');
    return join(this.dir, `${taskId}.jsonl`);
  }

  async append(entries: LogEntry[]) {
    this.ready ??= mkdir(this.dir, { recursive: true });
    await this.ready;
    const byTask = new Map<string, string>();
    for (const e of entries) byTask.set(e.task_id, (byTask.get(e.task_id) ?? '') + `${JSON.stringify(e)}\n`);
    for (const [taskId, text] of byTask) await appendFile(this.file(taskId), text);
  }

  async read(taskId: string, offset: number, limit: number) {
    let text = '';
    try {
      text = await readFile(this.file(taskId), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const rows = text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as LogEntry);
    return { rows: rows.slice(offset, offset + limit), total: rows.length };
  }

  async deleteOf(taskIds: string[]) {
    await Promise.all(taskIds.map((id) => unlink(this.file(id)).catch(() => {})));
  }

  async deleteBefore(before: Date) {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return 0;
    }
    let removed = 0;
    for (const name of names.filter((n) => n.endsWith('.jsonl'))) {
      const path = join(this.dir, name);
      const info = await stat(path).catch(() => undefined);
      if (info && info.mtimeMs < before.getTime()) {
        await unlink(path).catch(() => {});
        removed++;
      }
    }
    return removed;
  }
}

/** The registered backends; the setting is validated against them. */
export class LogSinks {
  private readonly sinks = new Map<string, LogSink>();

  register(sink: LogSink): void {
    this.sinks.set(sink.id, sink);
  }

  get(id: string): LogSink | undefined {
    return this.sinks.get(id);
  }

  ids(): string[] {
    return [...this.sinks.keys()];
  }

  all(): LogSink[] {
    return [...this.sinks.values()];
  }

  list(): { id: string; name: string }[] {
    return this.all().map(({ id, name }) => ({ id, name }));
  }
}
