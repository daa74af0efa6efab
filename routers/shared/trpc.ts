import { initTRPC, TRPCError } from '@trpc/server';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { AppError, ForbiddenError } from '../../lib/errors.ts';
import type { Caller, Context } from './context.ts';
import { toErrorBody } from './error-body.ts';

export interface Meta extends OpenApiMeta {
  /** The permission a route requires; shown in the OpenAPI document as `x-permission`. */
  permission?: string;
  /** The REST answer is the list envelope (`data, total, current, page_size`) rather than `{data}`. */
  list?: boolean;
  /** HTTP status of a successful REST answer (201 for creates). */
  successStatus?: number;
  /** Reachable without a token. */
  public?: boolean;
}

const t = initTRPC
  .context<Context>()
  .meta<Meta>()
  .create({
    // No stack traces or internal messages on /trpc either, whatever NODE_ENV says.
    isDev: false,
    errorFormatter({ shape, error, ctx }) {
      const body = toErrorBody(error, ctx?.req.locale ?? 'en');
      return { ...shape, message: body.err, data: { code: shape.data.code, httpStatus: shape.data.httpStatus, path: shape.data.path }, appCode: body.code, err: body.err };
    },
  });

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

const TRPC_CODE_BY_STATUS: Record<number, TRPCError['code']> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  429: 'TOO_MANY_REQUESTS',
  503: 'SERVICE_UNAVAILABLE',
};

/** Gives /trpc clients the tRPC code matching an AppError's status (tRPC would call every plain error INTERNAL). */
const baseProcedure = t.procedure.use(async ({ next }) => {
  const result = await next();
  if (!result.ok && result.error.cause instanceof AppError) {
    const app = result.error.cause;
    throw new TRPCError({ code: TRPC_CODE_BY_STATUS[app.status] ?? 'INTERNAL_SERVER_ERROR', message: app.message, cause: app });
  }
  return result;
});

export const publicProcedure = baseProcedure.meta({ public: true });

/** Any logged-in user (status and session checked). */
export const authedProcedure = baseProcedure.use(async ({ ctx, next }) => {
  const caller: Caller = await ctx.services.auth.authenticate(ctx.req);
  return next({ ctx: { ...ctx, caller } });
});

/** Logged in and holding `code`; administrators hold every permission. */
export function requirePermission(code: string) {
  return authedProcedure.meta({ permission: code }).use(({ ctx, next }) => {
    if (!ctx.caller.isAdmin && !ctx.caller.permissions.has(code)) throw new ForbiddenError('auth.missing_permission', { code });
    return next();
  });
}

/** Logged in with the global admin role. */
export const adminProcedure = authedProcedure.meta({ permission: 'admin' }).use(({ ctx, next }) => {
  if (!ctx.caller.isAdmin) throw new ForbiddenError('auth.admin_only');
  return next();
});
