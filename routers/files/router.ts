import { z } from 'zod';
import { timestamp } from '../common/schemas.ts';
import { authedProcedure, router } from '../common/trpc.ts';

/**
 * For typed clients on /trpc. REST clients use `GET /api/files/{fileKey}?method=sign` (a plain Fastify
 * route, server/http/files.ts), because the same path also streams the file.
 */
export const filesRouter = router({
  sign: authedProcedure
    .input(z.object({ fileKey: z.string().min(1).max(64) }))
    .output(z.object({ url: z.string(), expires_at: timestamp }))
    .query(async ({ ctx, input }) =>
      ctx.services.files.sign(await ctx.services.files.forCaller(ctx.caller, input.fileKey)),
    ),
});
