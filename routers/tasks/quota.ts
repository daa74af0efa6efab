import type { Database } from '../../db/database.ts';
import { countActiveUserTasks } from '../../db/repositories/tasks.ts';
import { TooManyRequestsError } from '../../lib/errors.ts';

/**
 * `quota.active_user_tasks`: the pending and running `user` tasks one user may have. The count and the write that
 * adds a task run under this node's lock on the user, so one node never admits past the quota; nodes do not share
 * the lock, so N nodes admitting at the same moment can reach the quota + N − 1 (docs/decisions.md).
 */
export class UserTaskQuota {
  constructor(
    private readonly db: Database,
    /** 0: no limit. */
    private readonly max: number,
  ) {}

  /** Runs `add` (a create, or a retry putting a task back to pending) unless `userId` is at the quota: 429 then. */
  admit<T>(userId: string, add: () => Promise<T>): Promise<T> {
    if (this.max === 0) return add();
    return this.db.withLock(`${this.db.t.tasks}:quota:${userId}`, async () => {
      if ((await countActiveUserTasks(this.db, userId)) >= this.max)
        throw new TooManyRequestsError('task.quota', { max: this.max });
      return add();
    });
  }
}
