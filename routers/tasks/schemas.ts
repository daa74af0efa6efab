import { z } from 'zod';
import { paginationInput, searchInput, timestamp, uuidString } from '../common/schemas.ts';

import { taskSchema, taskStatus } from '../../lib/task-schema.ts';

export { taskSchema };

export const taskLogSchema = z
  .object({
    id: uuidString,
    task_id: uuidString,
    level: z.enum(['info', 'warn', 'error']),
    message: z.string(),
    created_at: timestamp,
  })
  .meta({ id: 'TaskLog' });

export const listTasksInput = searchInput.extend({
  status: taskStatus.optional().meta({ description: 'Only tasks in this status' }),
  type: z.string().min(1).max(64).optional().meta({ description: 'Only tasks of this type (exact)' }),
});
export type ListTasksInput = z.infer<typeof listTasksInput>;
export const taskLogsInput = paginationInput.extend({ id: z.uuid() });
export const logBackendSchema = z.object({ id: z.string(), name: z.string() }).meta({ id: 'LogStorageBackend' });
export const logBackendList = z.array(logBackendSchema);
/** The caller's recent tasks for a task indicator. */
export const recentTasksOutput = z.array(taskSchema);

/** The 429 of routes that add a pending `user` task (told in the OpenAPI document). */
export const USER_TASKS_QUOTA = 'the user already has `quota.active_user_tasks` pending or running user tasks';

export const taskCountsOutput = z
  .object({
    pending: z.number().int(),
    running: z.number().int(),
    success: z.number().int().meta({ description: 'Finished in the last 24 h' }),
    failed: z.number().int().meta({ description: 'Finished in the last 24 h' }),
    cancelled: z.number().int().meta({ description: 'Finished in the last 24 h' }),
  })
  .meta({ id: 'TaskCounts' });
