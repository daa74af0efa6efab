import type { Database } from '../../db/database.ts';
import { ReadCache } from '../../db/read-cache.ts';
import { KeptTaskRows } from '../../db/repositories/listed-tasks.ts';
import {
  countCurrentTasks,
  findTask,
  listRecentUserTasks,
  listTasks,
  type ListedTask,
} from '../../db/repositories/tasks.ts';
import type { TaskEngine } from '../../engine/engine.ts';
import { toTaskJson, type TaskJson } from '../../engine/types.ts';
import { NotFoundError } from '../../lib/errors.ts';
import type { MaybePromise } from '../../lib/maybe-async.ts';
import type { AuditAction, AuditWriter } from '../audit/writer.ts';
import type { Actor, Caller, ListScope } from '../common/context.ts';
import { offsetOf, page, type Pagination } from '../common/schemas.ts';
import type { UserTaskQuota } from './quota.ts';
import type { ListTasksInput } from './schemas.ts';

const RECENT_MS = 24 * 3_600_000;

/**
 * Tasks through the API: an administrator sees every task, anyone else the tasks they created; a request acting
 * in an organization (`orgId`, from X-Scope-OrgID) sees only that organization's. A task the caller may not
 * see answers 404 like one that does not exist. State changes go through the engine. The lists are read again
 * whenever the database has changed (db/read-cache.ts), the recent tasks also once one of them leaves the window.
 */
export class TaskService {
  private readonly pages: ReadCache<ReturnType<typeof page<ListedTask>>>;
  private readonly recents: ReadCache<ListedTask[]>;
  private readonly rows: KeptTaskRows;

  constructor(
    private readonly db: Database,
    private readonly engine: TaskEngine,
    private readonly audit: AuditWriter,
    private readonly quota: UserTaskQuota,
    cacheSize: number,
  ) {
    this.pages = new ReadCache(db, cacheSize);
    this.recents = new ReadCache(db, cacheSize);
    this.rows = new KeptTaskRows(cacheSize);
  }

  list(caller: Caller, p: ListTasksInput, { orgId, noCache }: ListScope = {}) {
    const creatorId = caller.isAdmin ? undefined : caller.id;
    return this.pages.get(
      JSON.stringify([creatorId, orgId, p.search, p.status, p.type, p.current, p.page_size]),
      async () => {
        const { rows, total } = await listTasks(
          this.db,
          this.rows,
          { creatorId, orgId, search: p.search, status: p.status, type: p.type },
          offsetOf(p),
          p.page_size,
        );
        return page(rows, total, p);
      },
      undefined,
      noCache,
    );
  }

  async get(caller: Caller, id: string, orgId?: string): Promise<TaskJson> {
    const row = await findTask(this.db, id);
    if (!row || (!caller.isAdmin && row.creator_id !== caller.id) || (orgId && row.org_id !== orgId))
      throw new NotFoundError('task.not_found');
    return toTaskJson(row);
  }

  async logs(caller: Caller, id: string, p: Pagination, orgId?: string) {
    await this.get(caller, id, orgId);
    const { rows, total } = await this.engine.logs(id, offsetOf(p), p.page_size);
    return page(rows, total, p);
  }

  /** The storage backends task logs can be kept in (the `task_log_storage_backend` setting's values). */
  logStorageBackends() {
    return this.engine.logSinks.list();
  }

  /**
   * The caller's `user` tasks that are pending or running or finished in the last 24 h (newest 10). Kept until
   * the database changes or the first finished one of them is 24 h old: only then could time alone change them.
   */
  recent(caller: Caller, { orgId, noCache }: ListScope = {}): MaybePromise<TaskJson[]> {
    return this.recents.get(
      JSON.stringify([caller.id, orgId]),
      () => listRecentUserTasks(this.db, this.rows, caller.id, new Date(Date.now() - RECENT_MS), 10, orgId),
      (rows) => Math.min(...rows.map((r) => (r.finished_at ? Date.parse(r.finished_at) + RECENT_MS : Infinity))),
      noCache,
    );
  }

  /** How many of the tasks the caller sees are pending or running now, and finished each way in the last 24 h. */
  async counts(caller: Caller, orgId?: string): Promise<Record<TaskJson['status'], number>> {
    const creatorId = caller.isAdmin ? undefined : caller.id;
    const n = await countCurrentTasks(this.db, { creatorId, orgId }, new Date(Date.now() - RECENT_MS));
    return {
      pending: n.pending ?? 0,
      running: n.running ?? 0,
      success: n.success ?? 0,
      failed: n.failed ?? 0,
      cancelled: n.cancelled ?? 0,
    };
  }

  cancel(id: string, actor: Actor): Promise<TaskJson> {
    return this.change('cancel', id, actor, () => this.engine.cancel(id));
  }

  /** A `user` task retried is pending again, so it takes a place of its creator's quota like a new one. */
  retry(id: string, actor: Actor): Promise<TaskJson> {
    return this.change('retry', id, actor, (before) =>
      before.category === 'user' && before.creator_id
        ? this.quota.admit(before.creator_id, () => this.engine.retry(id))
        : this.engine.retry(id),
    );
  }

  async remove(id: string, actor: Actor): Promise<void> {
    await this.change('delete', id, actor, async () => {
      await this.engine.remove(id);
      return undefined;
    });
  }

  private async change<T extends TaskJson | undefined>(
    action: AuditAction,
    id: string,
    { caller, req }: Actor,
    apply: (before: TaskJson) => Promise<T>,
  ): Promise<T> {
    const before = await this.get(caller, id, req.orgId);
    const after = await apply(before);
    await this.audit.write({
      action,
      resource_type: 'task',
      resource_id: id,
      actor: caller,
      req,
      details: {
        type: before.type,
        before: { status: before.status },
        ...(after ? { after: { status: after.status } } : {}),
      },
    });
    return after;
  }
}
