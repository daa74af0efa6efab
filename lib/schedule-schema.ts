import { z } from 'zod';
import { timestamp } from './schema-formats.ts';

/** A cron schedule as the API answers it: the one source of `ScheduleJson`, for the scheduler and the HTTP schemas. */
export const scheduleSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    spec: z.string().meta({ description: 'Cron spec: five fields, or six with seconds first' }),
    task_type: z.string(),
    timezone: z.string(),
    enabled: z.boolean(),
    next_run: timestamp.nullable(),
    last_run: timestamp.nullable(),
  })
  .meta({ id: 'TaskSchedule' });

export type ScheduleJson = z.infer<typeof scheduleSchema>;
