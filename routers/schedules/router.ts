import { z } from 'zod';
import { taskSchema } from '../tasks/schemas.ts';
import { requirePermission, router } from '../shared/trpc.ts';
import { scheduleIdInput, scheduleSchema, toggleInput } from './schemas.ts';
import { noInput } from '../shared/schemas.ts';

const tags = ['Task schedules'];

export const schedulesRouter = router({
  list: requirePermission('task:schedule:list')
    .meta({ openapi: { method: 'GET', path: '/task-schedules', tags, summary: 'Cron schedules defined in code, with their state' } })
    .input(noInput)
    .output(z.array(scheduleSchema))
    .query(({ ctx }) => ctx.services.schedules.list()),

  toggle: requirePermission('task:schedule:update')
    .meta({ openapi: { method: 'POST', path: '/task-schedules/{id}/toggle', tags, summary: 'Enable or disable a schedule (body {enabled}; absent flips it)' } })
    .input(toggleInput)
    .output(scheduleSchema)
    .mutation(({ ctx, input }) => ctx.services.schedules.toggle(input.id, input.enabled, { caller: ctx.caller, req: ctx.req })),

  trigger: requirePermission('task:schedule:update')
    .meta({ openapi: { method: 'POST', path: '/task-schedules/{id}/trigger', tags, summary: 'Run a schedule once now; answers the created task' } })
    .input(scheduleIdInput)
    .output(taskSchema)
    .mutation(({ ctx, input }) => ctx.services.schedules.trigger(input.id, { caller: ctx.caller, req: ctx.req })),
});
