import type { Database } from '../database.ts';
import type { Dialect } from '../dialects/index.ts';
import type { DbLogger } from '../options.ts';
import {
  changeTasks,
  claimTasks,
  deleteTasks,
  expiredLeases,
  heldTasks,
  insertTaskOnce,
  insertTasks,
  renewLeases,
  setTaskArtifact,
  setTaskProgress,
  type ClaimRequest,
  type HeldTask,
  type NewTaskRow,
  type TaskChange,
  type TaskRow,
} from './tasks.ts';
import { TaskVersions } from './task-versions.ts';

/**
 * Every write to the tasks table, and the reads that must see the writes of this process at once. Which one
 * a database gets follows whether its dialect claims in the database (`Dialect.claim`); the task engine and the task API see no difference.
 */
export interface TaskStore {
  insert(rows: NewTaskRow[], now: Date): Promise<void>;
  /** Inserts unless a task with the same fire key exists (another node won this cron fire); true when inserted. */
  insertOnce(row: NewTaskRow & { fire_key: string }, now: Date): Promise<boolean>;
  /** Takes up to `limit` claimable pending tasks of the given types, oldest first, for this worker. */
  claim(request: ClaimRequest): Promise<TaskRow[]>;
  /** Applies fenced changes; each answer says whether its row was still in the expected state. */
  change(changes: TaskChange[]): Promise<boolean[]>;
  /** Progress of a running task; no fence beyond the claim (progress is advisory). */
  setProgress(id: string, claimId: string, progress: number): Promise<void>;
  setArtifact(id: string, fileKey: string, fileName: string): Promise<void>;
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
function inPlaceTaskStore(db: Database, claim: NonNullable<Dialect['claim']>): TaskStore {
  return {
    insert: (rows, now) => insertTasks(db, rows, now),
    insertOnce: (row, now) => insertTaskOnce(db, row, now),
    claim: (request) => claimTasks(db, claim, request),
    change: (changes) => changeTasks(db, changes),
    setProgress: (id, claimId, progress) => setTaskProgress(db, id, claimId, progress),
    setArtifact: (id, fileKey, fileName) => setTaskArtifact(db, id, fileKey, fileName),
    renew: (workerId, ids, leaseMs) => renewLeases(db, workerId, ids, leaseMs),
    held: (ids, onlyCancelled) => heldTasks(db, ids, onlyCancelled),
    expired: (limit) => expiredLeases(db, limit),
    remove: (ids) => deleteTasks(db, ids),
    settle: async () => {},
    detach: async () => {},
  };
}

/** The state versioned task writes share: one per set of tables in the process (see openDatabase). */
export interface TaskStoreShared {
  versions?: TaskVersions;
}

export function taskStoreFor(db: Database, shared: TaskStoreShared, logger: DbLogger): TaskStore {
  if (db.dialect.claim) return inPlaceTaskStore(db, db.dialect.claim);
  shared.versions ??= new TaskVersions(logger);
  return shared.versions.attach(db);
}
