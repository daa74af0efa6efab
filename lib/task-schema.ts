import { z } from 'zod';
import { timestamp, uuidString as uuid } from './schema-formats.ts';

/**
 * The task as the API and runners see it (docs/engine.md): the one source of the status list, the categories
 * and the task JSON, for the engine, the task store and the HTTP schemas alike.
 */
export const TASK_STATUSES = ['pending', 'running', 'success', 'failed', 'cancelled'] as const;
export const taskStatus = z.enum(TASK_STATUSES);
export const taskCategory = z.enum(['user', 'system']);

export const taskSchema = z
  .object({
    id: uuid,
    type: z.string(),
    status: taskStatus,
    category: taskCategory,
    payload: z.string(),
    progress: z.number().int().min(0).max(100),
    result: z.string().nullable().meta({ description: "The runner's return value as JSON" }),
    error: z.string().nullable(),
    retry_count: z.number().int().meta({ description: 'Automatic retries so far (reset by a manual retry)' }),
    max_retries: z.number().int(),
    creator_id: uuid.nullable(),
    cron_schedule_id: z.string().nullable(),
    artifact_file_key: z.string().nullable(),
    artifact_file_name: z.string().nullable(),
    org_id: uuid.nullable(),
    created_at: timestamp,
    updated_at: timestamp,
    started_at: timestamp.nullable(),
    finished_at: timestamp.nullable(),
  })
  .meta({ id: 'Task' });

export type TaskStatus = z.infer<typeof taskStatus>;
export type TaskCategory = z.infer<typeof taskCategory>;
export type TaskJson = z.infer<typeof taskSchema>;

const JSON_KEYS = Object.keys(taskSchema.shape) as (keyof TaskJson)[];

/** The task JSON of a stored row (which carries bookkeeping columns besides). */
export function toTaskJson(row: TaskJson): TaskJson {
  const out: Record<string, unknown> = {};
  for (const k of JSON_KEYS) out[k] = row[k];
  return out as TaskJson;
}
