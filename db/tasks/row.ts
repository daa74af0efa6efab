import type { Knex } from 'knex';
import type { TaskJson } from '../../lib/task-schema.ts';
import { isoFromDb } from '../dialects/index.ts';
import type { TaskTable } from './table.ts';

export type { TaskStatus } from '../../lib/task-schema.ts';

/** A task as stored: the task JSON and the hidden bookkeeping columns. Times are ISO strings. */
export interface TaskRow extends TaskJson {
  fire_key: string | null;
  log_backend: string | null;
  worker_id: string | null;
  claim_id: string | null;
  lease_expires_at: string | null;
  cancel_requested: boolean;
  run_after: string;
  deleted_at: string | null;
  /**
   * 0 when inserted; grows by one with every UPDATE in place (`updateColumns`, the claim) and every new row
   * version on ClickHouse, so an id and a version name one state of the task as the API shows it: what the
   * lists' kept rows are keyed by (db/repositories/listed-tasks.ts). A lease renewal in place, which changes nothing
   * shown, leaves it (on ClickHouse a renewal is a new version too).
   */
  version: number;
}

export type NewTaskRow = Pick<
  TaskRow,
  'id' | 'type' | 'category' | 'payload' | 'max_retries' | 'creator_id' | 'cron_schedule_id' | 'fire_key' | 'org_id'
>;

/** A change of stored columns; `run_after_ms` sets run_after to the database clock plus that delay. */
export type TaskPatch = Partial<Omit<TaskRow, 'id' | 'run_after'>> & { run_after_ms?: number };

/** How a running task stands, as a renewal or a cancel check reads it. */
export interface HeldTask {
  id: string;
  status: TaskRow['status'];
  claim_id: string | null;
  cancel_requested: boolean;
}

const TIME_COLUMNS: ReadonlySet<string> = new Set([
  'lease_expires_at',
  'run_after',
  'created_at',
  'updated_at',
  'started_at',
  'finished_at',
  'deleted_at',
]);

export function taskFromDb(raw: Record<string, unknown>): TaskRow {
  const row = { ...raw } as Record<string, unknown>;
  for (const k of TIME_COLUMNS) row[k] = isoFromDb(row[k]);
  row.cancel_requested = Boolean(row.cancel_requested);
  row.progress = Number(row.progress);
  row.retry_count = Number(row.retry_count);
  row.max_retries = Number(row.max_retries);
  row.version = Number(row.version ?? 0);
  return row as unknown as TaskRow;
}

export function heldFromDb(r: Record<string, unknown>): HeldTask {
  return {
    id: String(r.id),
    status: r.status as HeldTask['status'],
    claim_id: (r.claim_id as string | null) ?? null,
    cancel_requested: Boolean(r.cancel_requested),
  };
}

/** The columns as the database takes them; a whole row (versioned writes) converts the same way. */
export function toDbPatch(table: TaskTable, patch: TaskPatch | TaskRow): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(patch)) {
    if (k === 'run_after_ms') out.run_after = table.dialect.clock(table.knex, v as number);
    else out[k] = TIME_COLUMNS.has(k) && typeof v === 'string' ? table.dialect.toDbTime(new Date(v)) : v;
  }
  return out;
}

/** An UPDATE's columns: the patch as the database takes it, and the row's next version. */
export function updateColumns(table: TaskTable, patch: TaskPatch): Record<string, unknown> {
  return Object.assign(toDbPatch(table, patch), nextVersion(table));
}

/** The `version` column of an UPDATE in place: one more than the row held. */
export function nextVersion(table: TaskTable): { version: Knex.Raw } {
  return { version: table.knex.raw('?? + 1', ['version']) };
}

/** The row a task's insert stores, as read back (times as ISO strings, `at` for all three). */
export function pendingTaskRow(t: NewTaskRow, at: string): TaskRow {
  // The new task's columns assigned onto a literal of the others (the two never share a key): V8 (Node 20) builds
  // `{ ...t, <twenty more> }` a property at a time, about 30 µs and 27 KB of garbage per call (a create made two);
  // this costs 0.4 µs.
  return Object.assign(
    {
      status: 'pending' as const,
      progress: 0,
      result: null,
      error: null,
      retry_count: 0,
      artifact_file_key: null,
      artifact_file_name: null,
      log_backend: null,
      worker_id: null,
      claim_id: null,
      lease_expires_at: null,
      cancel_requested: false,
      run_after: at,
      created_at: at,
      updated_at: at,
      started_at: null,
      finished_at: null,
      deleted_at: null,
      version: 0,
    },
    t,
  );
}

/** Claim order: oldest `run_after` first, then id (as the claim's ORDER BY). */
export function byRunAfter(a: TaskRow, b: TaskRow): number {
  return a.run_after < b.run_after ? -1 : a.run_after > b.run_after ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** The columns a run's artifact sets. */
export function artifactColumns(fileKey: string, fileName: string): TaskPatch {
  return { artifact_file_key: fileKey, artifact_file_name: fileName, updated_at: new Date().toISOString() };
}
