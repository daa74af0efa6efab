import { z } from 'zod';
import { scheduleSchema } from '../../lib/schedule-schema.ts';

export { scheduleSchema };
export const scheduleList = z.array(scheduleSchema);

// Schedule ids are defined in code; any 1–64 characters are looked up (an unknown one answers 404).
export const scheduleIdInput = z.object({ id: z.string().min(1).max(64) });
export const toggleInput = scheduleIdInput.extend({
  enabled: z.boolean().optional().meta({ description: 'Absent: flip the current state' }),
});
