import type { Scheduler } from '../../engine/scheduler.ts';
import type { TaskJson } from '../../engine/types.ts';
import type { ScheduleJson } from '../../lib/schedule-schema.ts';
import type { AuditWriter } from '../audit/writer.ts';
import type { Actor } from '../common/context.ts';

/** Schedules through the API: listed, toggled and triggered, each change audited. */
export class ScheduleService {
  constructor(
    private readonly scheduler: Scheduler,
    private readonly audit: AuditWriter,
  ) {}

  list(): Promise<ScheduleJson[]> {
    return this.scheduler.list();
  }

  async toggle(id: string, enabled: boolean | undefined, { caller, req }: Actor): Promise<ScheduleJson> {
    const before = await this.scheduler.get(id);
    const after = await this.scheduler.toggle(id, enabled);
    await this.audit.write({
      action: 'toggle',
      resource_type: 'schedule',
      resource_id: id,
      actor: caller,
      req,
      details: { before: { enabled: before.enabled }, after: { enabled: after.enabled } },
    });
    return after;
  }

  /** One task now, owned by the caller (category system). */
  async trigger(id: string, { caller, req }: Actor): Promise<TaskJson> {
    const task = await this.scheduler.trigger(id, caller.id, req.orgId);
    await this.audit.write({
      action: 'trigger',
      resource_type: 'schedule',
      resource_id: id,
      actor: caller,
      req,
      details: { task_id: task.id, task_type: task.type },
    });
    return task;
  }
}
