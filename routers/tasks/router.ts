import { tracked } from '@trpc/server';
import { translate } from '../../lib/messages/index.ts';
import { idParam, listOutput, messageOutput, noInput } from '../common/schemas.ts';
import { authedProcedure, requirePermission, router } from '../common/trpc.ts';
import { eventTicketSchema, taskEventsInput, type TaskEventJson } from '../task-events/schemas.ts';
import { EVENTS_PERMISSION } from '../task-events/service.ts';
import {
  listTasksInput,
  logBackendList,
  recentTasksOutput,
  taskCountsOutput,
  taskLogSchema,
  taskLogsInput,
  taskSchema,
  USER_TASKS_QUOTA,
} from './schemas.ts';

const tags = ['Tasks'];

export const tasksRouter = router({
  list: requirePermission('task:list')
    .meta({
      list: true,
      openapi: {
        method: 'GET',
        path: '/tasks',
        tags,
        summary:
          "Tasks, newest first (search on type and id, filter by status and type); admins see all, others their own; with X-Scope-OrgID only that organization's",
        description:
          'A page of tasks, newest first, with status, progress and result. Administrators see every task, others the ones they created.',
      },
    })
    .input(listTasksInput)
    .output(listOutput(taskSchema))
    .query(({ ctx, input }) => ctx.services.tasks.list(ctx.caller, input, ctx.req)),

  counts: requirePermission('task:list')
    .meta({
      openapi: {
        method: 'GET',
        path: '/tasks/counts',
        tags,
        summary: 'How many tasks are pending or running, and finished each way in the last 24 h',
        description:
          "Counts of the tasks `GET /tasks` shows the caller (admins all, others their own; with X-Scope-OrgID that organization's): pending and running now, and success, failed and cancelled among those finished in the last 24 hours.",
      },
    })
    .input(noInput)
    .output(taskCountsOutput)
    .query(({ ctx }) => ctx.services.tasks.counts(ctx.caller, ctx.req.orgId)),

  get: requirePermission('task:view')
    .meta({
      openapi: {
        method: 'GET',
        path: '/tasks/{id}',
        tags,
        summary: 'Get a task',
        description:
          'One task with its status, progress, result and artifact. A task the caller may not see → 404 E4041.',
      },
    })
    .input(idParam)
    .output(taskSchema)
    .query(({ ctx, input }) => ctx.services.tasks.get(ctx.caller, input.id, ctx.req.orgId)),

  logs: requirePermission('task:view')
    .meta({
      list: true,
      openapi: {
        method: 'GET',
        path: '/tasks/{id}/logs',
        tags,
        summary: "A task's execution log, oldest first",
        description:
          'A page of the lines the task logged while it ran, from the log storage the `task_log_storage_backend` setting picks.',
      },
    })
    .input(taskLogsInput)
    .output(listOutput(taskLogSchema))
    .query(({ ctx, input }) => ctx.services.tasks.logs(ctx.caller, input.id, input, ctx.req.orgId)),

  cancel: requirePermission('task:cancel')
    .meta({
      openapi: {
        method: 'POST',
        path: '/tasks/{id}/cancel',
        tags,
        summary: 'Cancel a pending task, or stop a running one (on whichever node runs it)',
        description:
          'Answers the task as it is after the request: a pending one is cancelled at once, a running one is told to stop on the node running it (docs/engine.md). Written to the audit log.',
      },
    })
    .input(idParam)
    .output(taskSchema)
    .mutation(({ ctx, input }) => ctx.services.tasks.cancel(input.id, { caller: ctx.caller, req: ctx.req })),

  retry: requirePermission('task:retry')
    .meta({
      quota: `${USER_TASKS_QUOTA} (a user task's creator)`,
      openapi: {
        method: 'POST',
        path: '/tasks/{id}/retry',
        tags,
        summary: 'Run a failed or cancelled task again',
        description: 'Queues the task to run again from the start and answers it. Written to the audit log.',
      },
    })
    .input(idParam)
    .output(taskSchema)
    .mutation(({ ctx, input }) => ctx.services.tasks.retry(input.id, { caller: ctx.caller, req: ctx.req })),

  delete: requirePermission('task:delete')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/tasks/{id}',
        tags,
        summary: 'Delete a task (soft); a running task must be cancelled first',
        description:
          'Marks the task deleted: it leaves the lists and answers 404 E4041 from then on. Written to the audit log.',
      },
    })
    .input(idParam)
    .output(messageOutput)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.tasks.remove(input.id, { caller: ctx.caller, req: ctx.req });
      return { message: translate('task.deleted', {}, ctx.req.locale) };
    }),

  recent: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/user-tasks',
        tags,
        summary: "The caller's recent user tasks (pending, running, or from the last 24 h; newest 10)",
        description:
          "For a task indicator in a user interface: the caller's own tasks that are pending or running or finished in the last 24 hours, newest 10.",
      },
    })
    .input(noInput)
    .output(recentTasksOutput)
    .query(({ ctx }) => ctx.services.tasks.recent(ctx.caller, ctx.req)),

  eventsTicket: requirePermission(EVENTS_PERMISSION)
    .meta({
      openapi: {
        method: 'POST',
        path: '/tasks/events/ticket',
        tags,
        summary: 'A single-use ticket, valid 60 s, that opens GET /tasks/events without a token in the URL',
        description:
          "For a browser's EventSource, which cannot send an Authorization header: `GET /tasks/events?ticket=<ticket>` opens one stream as this session, once, within 60 seconds. The stream ends when the session does.",
      },
    })
    .input(noInput)
    .output(eventTicketSchema)
    .mutation(({ ctx }) => ctx.services.taskEvents.issueTicket(ctx.caller)),

  // Server-sent events for tRPC's httpSubscriptionLink; the REST stream is GET /tasks/events
  // (server/http/task-events-route.ts). Each event is tracked by its id, so the client resumes after it.
  // The service checks the permission, in the organization the stream acts in (X-Scope-OrgID or org_id).
  events: authedProcedure
    .meta({ permission: EVENTS_PERMISSION })
    .input(taskEventsInput)
    .subscription(async function* ({ ctx, input, signal }) {
      const events = ctx.services.taskEvents;
      const sub = await events.open(
        ctx.caller,
        {
          taskId: input?.task_id,
          org: input?.org_id,
          orgId: ctx.req.orgId,
          lastEventId: input?.lastEventId ?? undefined,
        },
        'trpc',
      );
      signal?.addEventListener('abort', () => sub.close(), { once: true });
      for await (const event of sub) {
        events.metrics.sent.inc({ transport: 'trpc' });
        yield tracked(event.id, event as TaskEventJson);
      }
    }),

  logStorageBackends: requirePermission('system:settings:view')
    .meta({
      openapi: {
        method: 'GET',
        path: '/system/task-settings/log-storage-backends',
        tags: ['System settings'],
        summary: 'Values task_log_storage_backend accepts',
        description:
          'The id and name of each storage backend for task logs, the values the `task_log_storage_backend` setting accepts.',
      },
    })
    .input(noInput)
    .output(logBackendList)
    .query(({ ctx }) => ctx.services.tasks.logStorageBackends()),
});
