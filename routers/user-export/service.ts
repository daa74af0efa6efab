import type { TaskEngine } from '../../engine/engine.ts';
import type { TaskJson } from '../../engine/types.ts';
import type { AuditWriter } from '../audit/writer.ts';
import type { Actor } from '../common/context.ts';
import type { UserTaskQuota } from '../tasks/quota.ts';
import { USER_EXPORT_TYPE } from './runner.ts';
import type { UserExportPayload } from './schemas.ts';

/** Starts a user export: a `user_export` task owned by the caller, answered at once; 429 past the caller's quota. */
export class UserExportService {
  constructor(
    private readonly engine: TaskEngine,
    private readonly audit: AuditWriter,
    private readonly quota: UserTaskQuota,
  ) {}

  async start(input: UserExportPayload, { caller, req }: Actor): Promise<TaskJson> {
    const task = (await this.quota.admit(caller.id, () =>
      this.engine.create({
        type: USER_EXPORT_TYPE,
        payload: input,
        category: 'user',
        creatorId: caller.id,
        orgId: req.orgId,
      }),
    ))!;
    await this.audit.write({
      action: 'export',
      resource_type: 'user',
      resource_id: task.id,
      actor: caller,
      req,
      details: { task_id: task.id, ...input },
    });
    return task;
  }
}
