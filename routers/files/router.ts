import { authedProcedure, router } from '../common/trpc.ts';
import { signedFileSchema, signFileInput } from './schemas.ts';

/**
 * For typed clients on /trpc. REST clients use `GET /api/files/{fileKey}?method=sign` (a plain Fastify
 * route, server/http/files.ts), because the same path also streams the file.
 */
export const filesRouter = router({
  sign: authedProcedure
    .input(signFileInput)
    .output(signedFileSchema)
    .query(async ({ ctx, input }) =>
      ctx.services.files.sign(await ctx.services.files.forCaller(ctx.caller, input.fileKey)),
    ),
});
