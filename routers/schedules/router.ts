import { taskSchema } from '../tasks/schemas.ts';
import { requirePermission, router } from '../common/trpc.ts';
import { scheduleIdInput, scheduleList, scheduleSchema, toggleInput } from './schemas.ts';
import { noInput } from '../common/schemas.ts';

const tags = ['Task schedules'];

export const schedulesRouter = router({
  list: requirePermission('task:schedule:list')
    .meta({
      openapi: {
        method: 'GET',
        path: '/task-schedules',
        tags,
        summary: 'Cron schedules defined in code, with their state',
        description:
          'Each cron schedule the service defines in code, with its cron spec, time zone, whether it is enabled, and its next and last run.',
      },
    })
    .input(noInput)
    .output(scheduleList)
    .query(({ ctx }) => ctx.services.schedules.list()),

  toggle: requirePermission('task:schedule:update')
    .meta({
      openapi: {
        method: 'POST',
        path: '/task-schedules/{id}/toggle',
        tags,
        summary: 'Enable or disable a schedule (body {enabled}; absent flips it)',
        description:
          'Sets whether the schedule creates tasks; kept in the database, so every node follows. Written to the audit log.',
      },
    })
    .input(toggleInput)
    .output(scheduleSchema)
    .mutation(({ ctx, input }) =>
      ctx.services.schedules.toggle(input.id, input.enabled, { caller: ctx.caller, req: ctx.req }),
    ),

  trigger: requirePermission('task:schedule:update')
    .meta({
      openapi: {
        method: 'POST',
        path: '/task-schedules/{id}/trigger',
        tags,
        summary: 'Run a schedule once now; answers the created task',
        description:
          "Creates the schedule's task now, outside its timing, and answers it; a disabled schedule → 400 E4001. Written to the audit log.",
      },
    })
    .input(scheduleIdInput)
    .output(taskSchema)
    .mutation(({ ctx, input }) => ctx.services.schedules.trigger(input.id, { caller: ctx.caller, req: ctx.req })),
});
