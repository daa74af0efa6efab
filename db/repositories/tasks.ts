import type { Knex } from 'knex';
import type { Database } from '../database.ts';
import { isoFromDb, type Dialect } from '../dialects/index.ts';
import { countLiveRows, countOf } from '../counts.ts';
import { whereContains } from '../where-contains.ts';

export type TaskStatus = 'pending' | 'running' | 'success' | 'failed' | 'cancelled';

/** A task as stored, hidden bookkeeping columns included. Times are ISO strings. */
export interface TaskRow {
  id: string;
  type: string;
  status: TaskStatus;
  category: 'user' | 'system';
  payload: string;
  progress: number;
  result: string | null;
  error: string | null;
  retry_count: number;
  max_retries: number;
  creator_id: string | null;
  cron_schedule_id: string | null;
  fire_key: string | null;
  artifact_file_key: string | null;
  artifact_file_name: string | null;
  org_id: string | null;
  log_backend: string | null;
  worker_id: string | null;
  claim_id: string | null;
  lease_expires_at: string | null;
  cancel_requested: boolean;
  run_after: string;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
  deleted_at: string | null;
  /** Grows by one with each change where rows are versions (dialects without `claim`); 0 elsewhere. */
  version: number;
}

export type NewTaskRow = Pick<
  TaskRow,
  'id' | 'type' | 'category' | 'payload' | 'max_retries' | 'creator_id' | 'cron_schedule_id' | 'fire_key' | 'org_id'
>;

const TIME_COLUMNS = [
  'lease_expires_at',
  'run_after',
  'created_at',
  'updated_at',
  'started_at',
  'finished_at',
  'deleted_at',
] as const;

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

/** A change of stored columns; `run_after_ms` sets run_after to the database clock plus that delay. */
export type TaskPatch = Partial<Omit<TaskRow, 'id' | 'run_after'>> & { run_after_ms?: number };

/** The columns as the database takes them; a whole row (versioned writes) converts the same way. */
export function toDbPatch(db: Database, patch: TaskPatch | TaskRow): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(patch)) {
    if (k === 'run_after_ms') out.run_after = db.dialect.clock(db.knex, v as number);
    else
      out[k] =
        (TIME_COLUMNS as readonly string[]).includes(k) && typeof v === 'string' ? db.dialect.toDbTime(new Date(v)) : v;
  }
  return out;
}

/** The row a task's insert stores, as read back (times as ISO strings, `at` for all three). */
export function pendingTaskRow(t: NewTaskRow, at: string): TaskRow {
  return {
    ...t,
    status: 'pending',
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
  };
}

/** A new task's row as inserted; `runAfter` (the database clock) is one expression shared by a whole batch. */
function newRow(
  db: Database,
  t: NewTaskRow,
  now: Date,
  runAfter: unknown = db.dialect.clock(db.knex),
): Record<string, unknown> {
  return { ...toDbPatch(db, pendingTaskRow(t, now.toISOString())), run_after: runAfter };
}

/** Claim order: oldest `run_after` first, then id (as the claim's ORDER BY). */
export function byRunAfter(a: TaskRow, b: TaskRow): number {
  return a.run_after < b.run_after ? -1 : a.run_after > b.run_after ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** `runAfter` defaults to the database clock (the time every node compares leases and backoffs on). */
export async function insertTasks(
  db: Database,
  tasks: NewTaskRow[],
  now: Date,
  runAfter: unknown = db.dialect.clock(db.knex),
): Promise<void> {
  for (let i = 0; i < tasks.length; i += 500) {
    await db.knex(db.t.tasks).insert(tasks.slice(i, i + 500).map((t) => newRow(db, t, now, runAfter)));
  }
}

/** Inserts unless a task with the same fire key exists (another node won this cron fire); true when inserted. */
export async function insertTaskOnce(
  db: Database,
  task: NewTaskRow & { fire_key: string },
  now: Date,
  runAfter: unknown = db.dialect.clock(db.knex),
): Promise<boolean> {
  await db.upsert({ table: db.t.tasks, rows: [newRow(db, task, now, runAfter)], key: ['fire_key'] });
  const row = (await db.knex(db.t.tasks).where('fire_key', task.fire_key).first('id')) as { id: string } | undefined;
  return row?.id === task.id;
}

export async function findTask(
  db: Database,
  id: string,
  opts: { withDeleted?: boolean } = {},
): Promise<TaskRow | undefined> {
  await db.tasks.settle();
  const q = db.knex(db.t.tasks).where('id', id);
  if (!opts.withDeleted) q.whereNull('deleted_at');
  const row = (await q.first()) as Record<string, unknown> | undefined;
  return row ? taskFromDb(row) : undefined;
}

/** The columns lists show: a task as the API answers it, without the claim bookkeeping. */
const LISTED_COLUMNS = [
  'id',
  'type',
  'status',
  'category',
  'payload',
  'progress',
  'result',
  'error',
  'retry_count',
  'max_retries',
  'creator_id',
  'cron_schedule_id',
  'artifact_file_key',
  'artifact_file_name',
  'org_id',
  'created_at',
  'updated_at',
  'started_at',
  'finished_at',
] as const;

export type ListedTask = Pick<TaskRow, (typeof LISTED_COLUMNS)[number]>;

/**
 * A listed row as read. The bookkeeping columns are not read at all: on SQLite they made a page half as dear
 * again.
 */
function listedTaskFromDb(raw: Record<string, unknown>): ListedTask {
  return {
    ...(raw as unknown as ListedTask),
    progress: Number(raw.progress),
    retry_count: Number(raw.retry_count),
    max_retries: Number(raw.max_retries),
    created_at: isoFromDb(raw.created_at)!,
    updated_at: isoFromDb(raw.updated_at)!,
    started_at: isoFromDb(raw.started_at),
    finished_at: isoFromDb(raw.finished_at),
  };
}

export interface TaskFilter {
  creatorId?: string;
  orgId?: string;
  search?: string;
}

const newestFirst = [
  { column: 'created_at', order: 'desc' },
  { column: 'id', order: 'desc' },
] as const;

export async function listTasks(
  db: Database,
  f: TaskFilter,
  offset: number,
  limit: number,
): Promise<{ rows: ListedTask[]; total: number }> {
  await db.tasks.settle();
  const q = db.knex(db.t.tasks).whereNull('deleted_at');
  if (f.creatorId) q.where('creator_id', f.creatorId);
  if (f.orgId) q.where('org_id', f.orgId);
  if (f.search) whereContains(q, ['type'], f.search, ['id']);
  const total = f.creatorId || f.orgId || f.search ? await countOf(db, q) : await countLiveRows(db, db.t.tasks);
  const rows = await db.read(
    q
      .select(LISTED_COLUMNS)
      .orderBy([...newestFirst])
      .offset(offset)
      .limit(limit),
  );
  return { rows: rows.map(listedTaskFromDb), total };
}

/** A user's `user`-category tasks (of one organization, when given) that are pending or running, or finished since `since`; newest first. */
export async function listRecentUserTasks(
  db: Database,
  userId: string,
  since: Date,
  limit: number,
  orgId?: string,
): Promise<ListedTask[]> {
  await db.tasks.settle();
  const q = db
    .knex(db.t.tasks)
    .whereNull('deleted_at')
    .where({ creator_id: userId, category: 'user' })
    .where((w) =>
      w.whereIn('status', ['pending', 'running']).orWhere('finished_at', '>=', db.dialect.toDbTime(since) as string),
    );
  if (orgId) q.where('org_id', orgId);
  const rows = await db.read(
    q
      .select(LISTED_COLUMNS)
      .orderBy([...newestFirst])
      .limit(limit),
  );
  return rows.map(listedTaskFromDb);
}

export interface ClaimRequest {
  workerId: string;
  claimId: string;
  types: string[];
  limit: number;
  leaseMs: number;
  /** The values the claimed rows take beyond the claim bookkeeping (status, started_at, ...). */
  patch: TaskPatch;
}

/** Takes up to `limit` claimable pending tasks of the given types, oldest first, for this worker. */
export async function claimTasks(
  db: Database,
  claim: NonNullable<Dialect['claim']>,
  c: ClaimRequest,
): Promise<TaskRow[]> {
  const { knex, dialect, t } = db;
  const rows = await claim(knex, {
    table: t.tasks,
    candidates: (q) =>
      q
        .where('status', 'pending')
        .whereNull('deleted_at')
        .whereIn('type', c.types)
        .where('run_after', '<=', dialect.clock(knex))
        .orderBy([{ column: 'run_after' }, { column: 'id' }])
        .limit(c.limit),
    set: {
      ...toDbPatch(db, c.patch),
      worker_id: c.workerId,
      claim_id: c.claimId,
      lease_expires_at: dialect.clock(knex, c.leaseMs),
    },
  });
  return rows.map(taskFromDb).sort(byRunAfter);
}

/** Which row state a change expects; the update applies only if the row is still in it. */
export interface TaskFence {
  status: TaskStatus;
  /** The claim that must still hold the task (a node that lost its lease must not write). */
  claimId?: string | null;
  /** Only while the lease has run out (the reaper). */
  leaseExpired?: boolean;
  /**
   * The cancel flag the decision was made with: an outcome decided without a cancel must not land once a
   * cancel was accepted (the API answered it 200), on whichever node.
   */
  cancelRequested?: boolean;
}

function fenced(db: Database, q: Knex.QueryBuilder, ids: string | string[], fence: TaskFence): Knex.QueryBuilder {
  if (typeof ids === 'string') q.where('id', ids);
  else q.whereIn('id', ids);
  q.where('status', fence.status).whereNull('deleted_at');
  if (fence.cancelRequested !== undefined) q.where('cancel_requested', fence.cancelRequested);
  if (fence.claimId !== undefined) {
    if (fence.claimId === null) q.whereNull('claim_id');
    else q.where('claim_id', fence.claimId);
  }
  if (fence.leaseExpired) q.where('lease_expires_at', '<', db.dialect.clock(db.knex));
  return q;
}

export interface TaskChange {
  id: string;
  fence: TaskFence;
  patch: TaskPatch;
}

/**
 * Applies many fenced changes, in one transaction when there are several statements. Changes with the same
 * fence status, claim and patch (typical of a batch of finished runs) go out as one UPDATE.
 */
export async function changeTasks(db: Database, changes: TaskChange[]): Promise<boolean[]> {
  const groups = new Map<string, number[]>();
  changes.forEach((c, i) => {
    // Only changes that keep the claim can be grouped: afterwards the claim still tells which rows took them.
    const groupable = c.fence.claimId && !c.fence.leaseExpired && !('claim_id' in c.patch) && c.patch.status;
    const key = groupable ? JSON.stringify([c.fence, c.patch]) : `#${i}`;
    groups.set(key, [...(groups.get(key) ?? []), i]);
  });
  const run = async (k: Knex): Promise<boolean[]> => {
    const out: boolean[] = new Array(changes.length).fill(false);
    for (const members of groups.values()) {
      const first = changes[members[0]!]!;
      if (members.length === 1) {
        out[members[0]!] =
          (await fenced(db, k(db.t.tasks), first.id, first.fence).update(toDbPatch(db, first.patch))) > 0;
        continue;
      }
      const ids = members.map((i) => changes[i]!.id);
      const n = await fenced(db, k(db.t.tasks), ids, first.fence).update(toDbPatch(db, first.patch));
      if (n === ids.length) for (const i of members) out[i] = true;
      else {
        // Some rows had left the fence: find out which ones did take the change.
        const rows = (await k(db.t.tasks).whereIn('id', ids).select('id', 'claim_id', 'status')) as Record<
          string,
          unknown
        >[];
        const took = new Set(
          rows
            .filter((r) => r.claim_id === first.fence.claimId && r.status === first.patch.status)
            .map((r) => String(r.id)),
        );
        for (const i of members) out[i] = took.has(changes[i]!.id);
      }
    }
    return out;
  };
  return groups.size === 1 ? run(db.knex) : db.knex.transaction((trx) => run(trx));
}

/** Progress of a running task; no fence beyond the claim (progress is advisory). */
export async function setTaskProgress(db: Database, id: string, claimId: string, progress: number): Promise<void> {
  await db.knex(db.t.tasks).where({ id, claim_id: claimId, status: 'running' }).update({ progress });
}

export async function setTaskArtifact(db: Database, id: string, fileKey: string, fileName: string): Promise<void> {
  await db
    .knex(db.t.tasks)
    .where('id', id)
    .update({ artifact_file_key: fileKey, artifact_file_name: fileName, updated_at: db.dialect.toDbTime(new Date()) });
}

export interface HeldTask {
  id: string;
  status: TaskStatus;
  claim_id: string | null;
  cancel_requested: boolean;
}

/** Extends the leases of this worker's running tasks and reports how each of them stands now. */
export async function renewLeases(db: Database, workerId: string, ids: string[], leaseMs: number): Promise<HeldTask[]> {
  const { knex, t, dialect } = db;
  const out: HeldTask[] = [];
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    await knex(t.tasks)
      .whereIn('id', chunk)
      .where({ worker_id: workerId, status: 'running' })
      .update({ lease_expires_at: dialect.clock(knex, leaseMs) });
    out.push(...(await heldTasks(db, chunk)));
  }
  return out;
}

export async function heldTasks(db: Database, ids: string[], onlyCancelled = false): Promise<HeldTask[]> {
  if (!ids.length) return [];
  const q = db.knex(db.t.tasks).whereIn('id', ids).select('id', 'status', 'claim_id', 'cancel_requested');
  if (onlyCancelled) q.where('cancel_requested', true);
  const rows = (await q) as Record<string, unknown>[];
  return rows.map((r) => ({
    id: String(r.id),
    status: r.status as TaskStatus,
    claim_id: (r.claim_id as string | null) ?? null,
    cancel_requested: Boolean(r.cancel_requested),
  }));
}

/** Running tasks whose lease ran out (their node died or lost the database). */
export async function expiredLeases(db: Database, limit: number): Promise<TaskRow[]> {
  const rows = (await db
    .knex(db.t.tasks)
    .where('status', 'running')
    .where('lease_expires_at', '<', db.dialect.clock(db.knex))
    .limit(limit)) as Record<string, unknown>[];
  return rows.map(taskFromDb);
}

/** After a burst of creates: keeps the claim on its index plan (see Dialect.refreshStatistics). */
export function refreshTaskStatistics(db: Database): Promise<void> {
  return db.dialect.refreshStatistics(db.knex, db.t.tasks);
}

export async function countPendingTasks(db: Database): Promise<number> {
  await db.tasks.settle();
  const [row] = (await db.knex(db.t.tasks).where('status', 'pending').whereNull('deleted_at').count({ n: '*' })) as {
    n: number | string;
  }[];
  return Number(row?.n ?? 0);
}

/** Ids of finished (or soft-deleted, not running) tasks older than `before`, for the retention cleanup. */
export async function expiredTaskIds(db: Database, before: Date, limit: number): Promise<string[]> {
  await db.tasks.settle();
  const at = db.dialect.toDbTime(before) as string;
  const rows = (await db
    .knex(db.t.tasks)
    .where((w) =>
      w.where('finished_at', '<', at).orWhere((d) => d.where('deleted_at', '<', at).whereNot('status', 'running')),
    )
    .limit(limit)
    .select('id')) as { id: string }[];
  return rows.map((r) => r.id);
}

export async function deleteTasks(db: Database, ids: string[]): Promise<number> {
  return ids.length ? db.knex(db.t.tasks).whereIn('id', ids).del() : 0;
}
