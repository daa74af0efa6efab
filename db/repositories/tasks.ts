import type { Knex } from 'knex';
import type { Database } from '../database.ts';
import { whereStatus } from '../tasks/predicates.ts';
import { taskFromDb, type TaskRow, type TaskStatus } from '../tasks/row.ts';
import { countLiveRows, countOf, counted } from '../counts.ts';
import { ShapedRead } from '../fixed-read.ts';
import { pageWindow } from '../page-window.ts';
import { whereContains } from '../where-contains.ts';
import { KEY_COLUMNS, type KeptTaskRows, type ListedTask } from './listed-tasks.ts';

export type { ListedTask };

/**
 * The task API's reads (the engine's writes are the task store, db/tasks/). Each settles the store first, so
 * it sees every change this process made (versioned writes buffer them).
 */
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

export interface TaskFilter {
  creatorId?: string;
  orgId?: string;
  search?: string;
  status?: TaskStatus;
  type?: string;
}

const newestFirst = [
  { column: 'created_at', order: 'desc' },
  { column: 'id', order: 'desc' },
] as const;

/** Tasks not deleted, of the filter's creator, organization, status, type and search term where given. */
function filtered(db: Database, f: TaskFilter): Knex.QueryBuilder {
  const q = db.knex(db.t.tasks).whereNull('deleted_at');
  if (f.creatorId) q.where('creator_id', f.creatorId);
  if (f.orgId) q.where('org_id', f.orgId);
  if (f.status) q.where('status', f.status);
  if (f.type) q.where('type', f.type);
  if (f.search) whereContains(q, ['type'], f.search, ['id']);
  return q;
}

/** A page's ids and versions, newest first (KeptTaskRows reads its rows). */
const pageKeys = (q: Knex.QueryBuilder, offset: number, limit: number) =>
  pageWindow(q.select(KEY_COLUMNS).orderBy([...newestFirst]), offset, limit);

type Window = { offset: number; limit: number };
type Scope = { creatorId?: string; orgId?: string };
type Since = Scope & { userId: string; since: unknown };

/** The task lists' statements on one database, compiled once per shape (a search term is matched as a pattern, built each time). */
interface TaskReads {
  page: ShapedRead<Scope & Window>;
  count: ShapedRead<Scope>;
  recent: ShapedRead<Since & Window>;
}

const reads = new WeakMap<Database, TaskReads>();

function readsOf(db: Database): TaskReads {
  let r = reads.get(db);
  if (!r) {
    r = {
      page: new ShapedRead((v) => pageKeys(filtered(db, v), v.offset, v.limit), ['offset', 'limit']),
      count: new ShapedRead((v) => filtered(db, v).count({ n: '*' })),
      recent: new ShapedRead(
        (v) => {
          const q = liveOrFinishedSince(db, v.since).where({ creator_id: v.userId, category: 'user' });
          if (v.orgId) q.where('org_id', v.orgId);
          return pageKeys(q, v.offset, v.limit);
        },
        ['offset', 'limit'],
      ),
    };
    reads.set(db, r);
  }
  return r;
}

/**
 * A page of tasks, newest first, and how many match. Its rows come through `kept`: the page's ids and versions
 * are read, and only the rows `kept` does not hold at those versions.
 */
export async function listTasks(
  db: Database,
  kept: KeptTaskRows,
  f: TaskFilter,
  offset: number,
  limit: number,
): Promise<{ rows: ListedTask[]; total: number }> {
  await db.tasks.settle();
  const scope: Scope = { creatorId: f.creatorId || undefined, orgId: f.orgId || undefined };
  const r = readsOf(db);
  // A search, status or type is built each time; the scopes alone have compiled statements and a kept count.
  const narrowed = Boolean(f.search || f.status || f.type);
  let total: Promise<number>;
  if (narrowed) total = countOf(db, filtered(db, f));
  else if (scope.creatorId || scope.orgId) total = counted(db, r.count.of(scope));
  else total = countLiveRows(db, db.t.tasks, db.t.taskCount);
  const page = narrowed ? pageKeys(filtered(db, f), offset, limit) : r.page.of({ ...scope, offset, limit });
  const n = await total;
  return { rows: await kept.of(db, await db.read(page)), total: n };
}

/** Tasks not deleted that are pending or running, or finished since `since` (a time as the database takes it). */
function liveOrFinishedSince(db: Database, since: unknown): Knex.QueryBuilder {
  return db
    .knex(db.t.tasks)
    .whereNull('deleted_at')
    .where((w) => w.whereIn('status', ['pending', 'running']).orWhere('finished_at', '>=', since as string));
}

/** How many tasks (of one creator or organization, when given) are pending or running, or finished since `since`, by status. */
export async function countCurrentTasks(
  db: Database,
  f: { creatorId?: string; orgId?: string },
  since: Date,
): Promise<Record<string, number>> {
  await db.tasks.settle();
  const q = liveOrFinishedSince(db, db.dialect.toDbTime(since));
  if (f.creatorId) q.where('creator_id', f.creatorId);
  if (f.orgId) q.where('org_id', f.orgId);
  const rows = await db.read<{ status: string; n: number | string }>(
    q.select('status').count({ n: '*' }).groupBy('status'),
  );
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}

/** A user's `user`-category tasks (of one organization, when given) that are pending or running, or finished since `since`; newest first. */
export async function listRecentUserTasks(
  db: Database,
  kept: KeptTaskRows,
  userId: string,
  since: Date,
  limit: number,
  orgId?: string,
): Promise<ListedTask[]> {
  await db.tasks.settle();
  const read = readsOf(db).recent.of({
    userId,
    orgId: orgId || undefined,
    since: db.dialect.toDbTime(since),
    offset: 0,
    limit,
  });
  return kept.of(db, await db.read(read));
}

/**
 * Tasks (of one creator, organization or id, when given) that are pending or running, or finished since
 * `since`: the state a live events stream starts from. Newest first, at most `limit`.
 */
export async function listCurrentTasks(
  db: Database,
  f: { creatorId?: string; orgId?: string; taskId?: string },
  since: Date,
  limit: number,
): Promise<TaskRow[]> {
  await db.tasks.settle();
  const q = liveOrFinishedSince(db, db.dialect.toDbTime(since));
  if (f.creatorId) q.where('creator_id', f.creatorId);
  if (f.orgId) q.where('org_id', f.orgId);
  if (f.taskId) q.where('id', f.taskId);
  const rows = (await q.orderBy([...newestFirst]).limit(limit)) as Record<string, unknown>[];
  return rows.map(taskFromDb);
}

/** After a burst of creates: keeps the claim on its index plan (see Dialect.refreshStatistics). */
export function refreshTaskStatistics(db: Database): Promise<void> {
  return db.dialect.refreshStatistics(db.knex, db.t.tasks);
}

/** Pending tasks (not deleted) by type: one grouped count on the pending index. */
export async function countPendingTasksByType(db: Database): Promise<Map<string, number>> {
  await db.tasks.settle();
  const rows = (await whereStatus(db.knex(db.t.tasks), 'pending')
    .whereNull('deleted_at')
    .select('type')
    .count({ n: '*' })
    .groupBy('type')) as { type: string; n: number | string }[];
  return new Map(rows.map((r) => [r.type, Number(r.n)]));
}

/** How many `user` tasks of `userId` are pending or running (not deleted): what a user's task quota counts. */
export async function countActiveUserTasks(db: Database, userId: string): Promise<number> {
  await db.tasks.settle();
  const active = db
    .knex(db.t.tasks)
    .where({ creator_id: userId, category: 'user' })
    .whereIn('status', ['pending', 'running'])
    .whereNull('deleted_at');
  return countOf(db, active);
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
