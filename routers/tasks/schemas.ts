import { z } from 'zod';
import { paginationInput, searchInput, timestamp, uuidString } from '../common/schemas.ts';

export const taskStatus = z.enum(['pending', 'running', 'success', 'failed', 'cancelled']);

export const taskSchema = z
  .object({
    id: uuidString,
    type: z.string(),
    status: taskStatus,
    category: z.enum(['user', 'system']),
    payload: z.string(),
    progress: z.number().int().min(0).max(100),
    result: z.string().nullable().meta({ description: "The runner's return value as JSON" }),
    error: z.string().nullable(),
    retry_count: z.number().int().meta({ description: 'Automatic retries so far (reset by a manual retry)' }),
    max_retries: z.number().int(),
    creator_id: uuidString.nullable(),
    cron_schedule_id: z.string().nullable(),
    artifact_file_key: z.string().nullable(),
    artifact_file_name: z.string().nullable(),
    org_id: uuidString.nullable(),
    created_at: timestamp,
    updated_at: timestamp,
    started_at: timestamp.nullable(),
    finished_at: timestamp.nullable(),
  })
  .meta({ id: 'Task' });

export const taskLogSchema = z
  .object({
    id: uuidString,
    task_id: uuidString,
    level: z.enum(['info', 'warn', 'error']),
    message: z.string(),
    created_at: timestamp,
  })
  .meta({ id: 'TaskLog' });

export const listTasksInput = searchInput;
export const taskLogsInput = paginationInput.extend({ id: z.uuid() });
export const logBackendSchema = z.object({ id: z.string(), name: z.string() }).meta({ id: 'LogStorageBackend' });
