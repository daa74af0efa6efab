import { z } from 'zod';
import { timestamp } from '../common/schemas.ts';

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
export const scheduleList = z.array(scheduleSchema);

// Schedule ids are free strings defined in code.
export const scheduleIdInput = z.object({ id: z.string().min(1).max(64) });
export const toggleInput = scheduleIdInput.extend({
  enabled: z.boolean().optional().meta({ description: 'Absent: flip the current state' }),
});
