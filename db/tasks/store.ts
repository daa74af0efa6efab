import type { Dialect } from '../dialects/index.ts';
import { changeTasks, type TaskChange } from './change.ts';
import { claimTasks, claimTasksAfter, type ClaimRequest } from './claim.ts';
import { deleteTasks } from './delete.ts';
import { expiredLeases } from './expired.ts';
import { heldTasks } from './held.ts';
import { insertClaimedTask } from './insert-claimed.ts';
import { insertTaskOnce } from './insert-once.ts';
import { insertTasks } from './insert.ts';
import { renewLeases } from './renew.ts';
import { artifactColumns, type HeldTask, type NewTaskRow, type TaskRow } from './row.ts';
import { setRunningColumns } from './set-columns.ts';
import type { TaskTable } from './table.ts';

/**
 * Every write to the tasks table, and the reads that must see the writes of this process at once. Which store a
 * database gets follows whether its dialect claims in the database (`Dialect.claim`): fenced UPDATEs in place
 * here, row versions on ClickHouse (db/dialects/clickhouse/task-versions.ts); the engine and the task API see
 * no difference.
 */
export interface TaskStore {
  insert(rows: NewTaskRow[], now: Date): Promise<void>;
  /** Inserts unless a task with the same fire key exists (another node won this cron fire); true when inserted. */
  insertOnce(row: NewTaskRow & { fire_key: string }, now: Date): Promise<boolean>;
  /**
   * Inserts a new task already claimed (one statement for both, where the store writes rows in place); answers it
   * as `claim` would.
   */
  insertClaimed?(row: NewTaskRow, now: Date, request: ClaimRequest): Promise<TaskRow>;
  /** Takes up to `limit` claimable pending tasks of the given types, oldest first, for this worker. */
  claim(request: ClaimRequest): Promise<TaskRow[]>;
  /**
   * Where the database takes both at once (`Dialect.claimAfter`): applies `changes`, one group of `changeGroups`,
   * and claims; answers which changes took effect and the claimed rows. Atomic.
   */
  claimAfter?(request: ClaimRequest, changes: TaskChange[]): Promise<[boolean[], TaskRow[]]>;
  /** Applies fenced changes; each answer says whether its row was still in the expected state. */
  change(changes: TaskChange[]): Promise<boolean[]>;
  /** Progress of a running task, fenced on its claim; false: the run no longer holds the task. */
  setProgress(id: string, claimId: string, progress: number): Promise<boolean>;
  /** The artifact of a running task, fenced on its claim; false: the run no longer holds the task. */
  setArtifact(id: string, claimId: string, fileKey: string, fileName: string): Promise<boolean>;
  /** Extends the leases of this worker's running tasks and reports how each of them stands now. */
  renew(workerId: string, ids: string[], leaseMs: number): Promise<HeldTask[]>;
  held(ids: string[], onlyCancelled?: boolean): Promise<HeldTask[]>;
  /** Running tasks whose node died or lost the database. */
  expired(limit: number): Promise<TaskRow[]>;
  /** Hard delete (the retention cleanup); answers how many went. */
  remove(ids: string[]): Promise<number>;
  /** Resolves once every change made so far is stored and visible to any query. */
  settle(): Promise<void>;
  /** This database is closing: what only it could still store is stored first. */
  detach(): Promise<void>;
}

/** Fenced UPDATEs in place: row locks and affected-row counts keep several nodes apart. */
export function inPlaceTaskStore(table: TaskTable, claim: NonNullable<Dialect['claim']>): TaskStore {
  const { claimAfter } = table.dialect;
  return {
    ...(claimAfter && { claimAfter: (request, changes) => claimTasksAfter(table, claimAfter, request, changes) }),
    insert: (rows, now) => insertTasks(table, rows, now),
    insertOnce: (row, now) => insertTaskOnce(table, row, now),
    insertClaimed: (row, now, request) => insertClaimedTask(table, row, now, request),
    claim: (request) => claimTasks(table, claim, request),
    change: (changes) => changeTasks(table, changes),
    setProgress: (id, claimId, progress) => setRunningColumns(table, id, claimId, { progress }),
    setArtifact: (id, claimId, fileKey, fileName) =>
      setRunningColumns(table, id, claimId, artifactColumns(fileKey, fileName)),
    renew: (workerId, ids, leaseMs) => renewLeases(table, workerId, ids, leaseMs),
    held: (ids, onlyCancelled) => heldTasks(table, ids, onlyCancelled),
    expired: (limit) => expiredLeases(table, limit),
    remove: (ids) => deleteTasks(table, ids),
    settle: async () => {},
    detach: async () => {},
  };
}
