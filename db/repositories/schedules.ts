import type { Database } from '../database.ts';
import { isoFromDb } from '../dialects/index.ts';

/** What is stored of a schedule defined in code: whether it is enabled, and when it ran and runs next. */
export interface ScheduleStateRow {
  id: string;
  enabled: boolean;
  last_run: string | null;
  next_run: string | null;
}

const fromDb = (r: Record<string, unknown>): ScheduleStateRow => ({
  id: String(r.id),
  enabled: Boolean(r.enabled),
  last_run: isoFromDb(r.last_run),
  next_run: isoFromDb(r.next_run),
});
const COLUMNS = ['id', 'enabled', 'last_run', 'next_run'];

export async function readScheduleStates(db: Database): Promise<Map<string, ScheduleStateRow>> {
  const rows = (await db.knex(db.t.taskSchedules).select(COLUMNS)) as Record<string, unknown>[];
  return new Map(rows.map((r) => [String(r.id), fromDb(r)]));
}

export async function readScheduleState(db: Database, id: string): Promise<ScheduleStateRow | undefined> {
  const row = (await db.knex(db.t.taskSchedules).where('id', id).first(COLUMNS)) as Record<string, unknown> | undefined;
  return row ? fromDb(row) : undefined;
}

/** Creates the row with `initial` when missing, then applies `patch`; both only for the columns given. */
export async function saveScheduleState(
  db: Database,
  id: string,
  patch: Partial<Omit<ScheduleStateRow, 'id'>>,
  initialEnabled = true,
): Promise<void> {
  const time = (v: string | null | undefined) => (v ? db.dialect.toDbTime(new Date(v)) : v);
  const row: Record<string, unknown> = { updated_at: db.dialect.toDbTime(new Date()) };
  if (patch.enabled !== undefined) row.enabled = patch.enabled;
  if (patch.last_run !== undefined) row.last_run = time(patch.last_run);
  if (patch.next_run !== undefined) row.next_run = time(patch.next_run);
  await db.upsert({
    table: db.t.taskSchedules,
    rows: [{ id, enabled: initialEnabled, last_run: null, next_run: null, ...row }],
    key: ['id'],
    merge: Object.keys(row),
  });
}
