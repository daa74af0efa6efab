import type { Database } from '../database.ts';
import { isoFromDb } from '../dialects/index.ts';

export interface TaskLogRow {
  id: string;
  task_id: string;
  level: 'info' | 'warn' | 'error';
  message: string;
  created_at: string;
}

export async function insertTaskLogs(db: Database, entries: TaskLogRow[]): Promise<void> {
  const time = db.dialect.toDbTime;
  for (let i = 0; i < entries.length; i += 500) {
    await db
      .knex(db.t.taskLogs)
      .insert(entries.slice(i, i + 500).map((e) => ({ ...e, created_at: time(new Date(e.created_at)) })));
  }
}

/** One task's entries, oldest first. */
export async function listTaskLogs(
  db: Database,
  taskId: string,
  offset: number,
  limit: number,
): Promise<{ rows: TaskLogRow[]; total: number }> {
  const q = db.knex(db.t.taskLogs).where('task_id', taskId);
  const [countRow] = (await q.clone().count({ n: '*' })) as { n: number | string }[];
  const rows = (await q
    .orderBy([{ column: 'created_at' }, { column: 'id' }])
    .offset(offset)
    .limit(limit)
    .select('id', 'task_id', 'level', 'message', 'created_at')) as Record<string, unknown>[];
  return {
    rows: rows.map((r) => ({ ...(r as unknown as TaskLogRow), created_at: isoFromDb(r.created_at)! })),
    total: Number(countRow?.n ?? 0),
  };
}

export async function deleteTaskLogsBefore(db: Database, before: Date): Promise<number> {
  return db
    .knex(db.t.taskLogs)
    .where('created_at', '<', db.dialect.toDbTime(before) as string)
    .del();
}

export async function deleteTaskLogsOf(db: Database, taskIds: string[]): Promise<number> {
  return taskIds.length ? db.knex(db.t.taskLogs).whereIn('task_id', taskIds).del() : 0;
}
