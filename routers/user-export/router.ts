import { taskSchema } from '../tasks/schemas.ts';
import { requirePermission, router } from '../common/trpc.ts';
import { USER_TASKS_QUOTA } from '../tasks/schemas.ts';
import { startUserExportInput } from './schemas.ts';

export const userExportRouter = router({
  start: requirePermission('user:export')
    .meta({
      quota: USER_TASKS_QUOTA,
      openapi: {
        method: 'POST',
        path: '/authorization/users/export',
        tags: ['Users'],
        summary: 'Export users as CSV: starts a user_export task and answers it',
        description:
          'Starts a `user_export` task and answers it at once. Once it succeeds, its `artifact_file_key` downloads a CSV file (id, username, email, status, roles, created_at) from GET /files/{fileKey}.',
      },
    })
    .input(startUserExportInput)
    .output(taskSchema)
    .mutation(({ ctx, input }) => ctx.services.userExport.start(input, { caller: ctx.caller, req: ctx.req })),
});
