import { z } from 'zod';

/** What an export is started with, and so the payload of its `user_export` task. */
export const startUserExportInput = z.object({
  search: z.string().max(128).optional().meta({ description: 'Only users whose username or email contains this' }),
});
export type UserExportPayload = z.infer<typeof startUserExportInput>;
