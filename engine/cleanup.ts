import type { Database } from '../db/database.ts';
import { findExpiredFiles } from '../db/repositories/files.ts';
import { deleteEndedSessions } from '../db/repositories/sessions.ts';
import { expiredTaskIds } from '../db/repositories/tasks.ts';
import type { TaskEngine } from './engine.ts';
import type { Scheduler } from './scheduler.ts';
import { SETTING_LOG_RETENTION } from './settings.ts';
import type { EngineSettings, RunnerContext } from './types.ts';

const DAY_MS = 86_400_000;
const BATCH = 500;

/** Deletes expired credentials of some kind (sessions here; reset and MFA tokens and OAuth states where they are defined); answers how many. */
export type CredentialCleaner = (db: Database, now: Date) => Promise<number>;

export interface CleanupDeps {
  db: Database;
  engine: TaskEngine;
  scheduler: Scheduler;
  settings: EngineSettings;
  /** Run by the expired sessions and tokens cleanup after the session cleanup. */
  credentialCleaners?: CredentialCleaner[];
  /**
   * Removes the audit records made before the date, answering how many: a prefix of the hash chain only, with
   * a signed checkpoint saying which (routers/audit/chain.ts).
   */
  removeAuditRecordsBefore(before: Date): Promise<number>;
}

const cutoff = (days: number) => new Date(Date.now() - days * DAY_MS);

/**
 * Task logs, finished tasks and artifacts older than `task_log_retention_days`: every log backend drops its
 * old lines; finished (or deleted) tasks go with their logs and files; any file past the retention goes too.
 */
async function cleanTaskData(ctx: RunnerContext, { db, engine, settings }: CleanupDeps) {
  const days = settings.get<number>(SETTING_LOG_RETENTION);
  const before = cutoff(days);
  let logs = 0;
  for (const sink of engine.logSinks.all()) logs += await sink.deleteBefore(before);
  ctx.progress(30);
  let tasks = 0;
  let files = 0;
  for (;;) {
    ctx.signal.throwIfAborted();
    const ids = await expiredTaskIds(db, before, BATCH);
    const expired = await findExpiredFiles(db, before, ids, BATCH);
    if (!ids.length && !expired.length) break;
    await engine.artifacts.remove(expired);
    files += expired.length;
    for (const sink of engine.logSinks.all()) await sink.deleteOf(ids);
    tasks += await db.tasks.remove(ids);
  }
  return {
    deleted_task_logs: logs,
    deleted_tasks: tasks,
    deleted_files: files,
    retention_days: days,
    cutoff: before.toISOString(),
  };
}

/** The built-in schedules of docs/engine.md, all daily at midnight UTC except the credential cleanup. */
export function registerBuiltInSchedules(deps: CleanupDeps): void {
  const { engine, scheduler, db, settings } = deps;

  engine.register('task_log_cleanup', (ctx) => cleanTaskData(ctx, deps));
  scheduler.define({
    id: 'task-log-cleanup',
    name: 'Task log cleanup',
    spec: '0 0 * * *',
    taskType: 'task_log_cleanup',
  });

  engine.register('audit_log_cleanup', async () => {
    const days = settings.get<number>('audit_log_retention_days');
    const before = cutoff(days);
    return {
      deleted_audit_logs: await deps.removeAuditRecordsBefore(before),
      retention_days: days,
      cutoff: before.toISOString(),
    };
  });
  scheduler.define({
    id: 'audit-log-cleanup',
    name: 'Audit log cleanup',
    spec: '0 0 * * *',
    taskType: 'audit_log_cleanup',
  });

  engine.register('session_cleanup', async () => {
    const now = new Date();
    let other = 0;
    for (const clean of deps.credentialCleaners ?? []) other += await clean(db, now);
    return { deleted_sessions: await deleteEndedSessions(db, now), deleted_tokens: other };
  });
  scheduler.define({
    id: 'session-cleanup',
    name: 'Expired sessions and tokens cleanup',
    spec: '*/15 * * * *',
    taskType: 'session_cleanup',
  });
}
