import type { Knex } from 'knex';
import type { Database } from '../database.ts';
import { isoFromDb } from '../dialects/index.ts';
import { insertByKnex } from '../dialects/insert-rows.ts';
import type { TaskStatus } from '../../lib/task-schema.ts';

/** One recorded task change: `task` is the task's API JSON at that moment. */
export interface TaskEventRow {
  id: number;
  task_id: string;
  user_id: string | null;
  org_id: string | null;
  status: TaskStatus;
  progress: number;
  task: string;
  created_at: string;
}

export type NewTaskEvent = Omit<TaskEventRow, 'id' | 'created_at'>;

/** Who may see an event: its task's creator (unless every task), its organization, one task. */
export interface TaskEventFilter {
  userId?: string;
  orgId?: string;
  taskId?: string;
}

/**
 * The next id of each events table whose engine does not number rows (ClickHouse, one process): seeded from
 * the largest stored id, then counted here, under the table's lock.
 */
const nextIds = new Map<string, { next: number }>();

function idCounterKey(db: Database): string {
  const o = db.options;
  return `${o.driver}|${o.path}|${o.host}:${o.port}/${o.schema}|${db.t.taskEvents}`;
}

/** Appends the events in order, in one statement (up to 500). */
export async function appendTaskEvents(db: Database, events: NewTaskEvent[], now: Date): Promise<void> {
  if (!events.length) return;
  const created_at = db.dialect.toDbTime(now);
  const rows: Record<string, unknown>[] = events.map((e) => ({ ...e, created_at }));
  // The dialect's bulk insert where it has one: knex compiling and binding seven values an event cost more CPU
  // than the JSON statement (db/dialects/postgres-insert.ts), three events a task.
  if (db.dialect.numbersRows) return (db.dialect.insertRows ?? insertByKnex)(db.knex, db.t.taskEvents, rows);
  const key = idCounterKey(db);
  await db.withLock(key, async () => {
    let counter = nextIds.get(key);
    if (!counter) {
      counter = { next: (await lastTaskEventId(db)) + 1 };
      nextIds.set(key, counter);
    }
    const first = counter.next;
    rows.forEach((row, i) => (row.id = first + i));
    await db.knex(db.t.taskEvents).insert(rows);
    counter.next = first + rows.length;
  });
}

function filtered(q: Knex.QueryBuilder, f: TaskEventFilter): Knex.QueryBuilder {
  if (f.userId) q.where('user_id', f.userId);
  if (f.orgId) q.where('org_id', f.orgId);
  if (f.taskId) q.where('task_id', f.taskId);
  return q;
}

/** Events after `after`, oldest first, at most `limit`. */
export async function readTaskEvents(
  db: Database,
  after: number,
  limit: number,
  f: TaskEventFilter = {},
): Promise<TaskEventRow[]> {
  const rows = (await filtered(db.knex(db.t.taskEvents).where('id', '>', after), f)
    .orderBy('id')
    .limit(limit)) as Record<string, unknown>[];
  return rows.map((r) => ({
    ...(r as unknown as TaskEventRow),
    id: Number(r.id),
    progress: Number(r.progress),
    created_at: isoFromDb(r.created_at)!,
  }));
}

/** The largest event id so far (0 for none). */
export async function lastTaskEventId(db: Database): Promise<number> {
  const [row] = (await db.knex(db.t.taskEvents).max({ id: 'id' })) as { id: unknown }[];
  return Number(row?.id ?? 0) || 0;
}

/** The oldest event id still kept, or undefined when none is. */
export async function firstTaskEventId(db: Database): Promise<number | undefined> {
  const [row] = (await db.knex(db.t.taskEvents).min({ id: 'id' })) as { id: unknown }[];
  const id = Number(row?.id ?? 0);
  return id > 0 ? id : undefined;
}

/** Deletes events recorded before `before` (the retention); answers how many went. */
export async function pruneTaskEvents(db: Database, before: Date): Promise<number> {
  return db
    .knex(db.t.taskEvents)
    .where('created_at', '<', db.dialect.toDbTime(before) as Knex.Value)
    .del();
}
