import { trace } from '@opentelemetry/api';
import { initTRPC } from '@trpc/server';
import { TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import { ForbiddenError } from '../../lib/errors.ts';
import { andThen, type MaybePromise } from '../../lib/maybe-async.ts';
import type { Caller, Context, RequestInfo } from './context.ts';
import { toErrorBody } from './error-body.ts';
import { onceByKey, type KeyedCall } from './idempotency.ts';
import { guardInput } from './input-guard.ts';

/**
 * The part of trpc-to-openapi's `OpenApiMeta` the routers use, declared here: the package's declarations then do
 * not import trpc-to-openapi, whose adapters' types need express, koa and next in an embedding application.
 * server/http/openapi.ts hands these routes to trpc-to-openapi, which checks the shape again.
 */
interface OpenApiRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: `/${string}`;
  tags?: string[];
  summary?: string;
  description?: string;
}

export interface Meta {
  openapi?: OpenApiRoute;
  /** The permission a route requires; shown in the OpenAPI document as `x-permission`. */
  permission?: string;
  /** The REST answer is the list envelope (`data, total, current, page_size`) rather than `{data}`. */
  list?: boolean;
  /** HTTP status of a successful REST answer (201 for creates). */
  successStatus?: number;
  /** Reachable without a token. */
  public?: boolean;
  /** A quota this route answers 429 E4291 beyond, besides the rate limits (told in the OpenAPI document). */
  quota?: string;
}

const TRPC_KEY_BY_STATUS: Record<number, keyof typeof TRPC_ERROR_CODES_BY_KEY> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  429: 'TOO_MANY_REQUESTS',
  503: 'SERVICE_UNAVAILABLE',
};

const t = initTRPC
  .context<Context>()
  .meta<Meta>()
  .create({
    // No stack traces or internal messages on /trpc either, whatever NODE_ENV says.
    isDev: false,
    // The tRPC code and HTTP status follow the AppError (tRPC itself would call every plain error INTERNAL).
    errorFormatter({ shape, error, ctx }) {
      const body = toErrorBody(error, ctx?.req.locale ?? 'en');
      const key = TRPC_KEY_BY_STATUS[body.status] ?? 'INTERNAL_SERVER_ERROR';
      return {
        message: body.err,
        code: TRPC_ERROR_CODES_BY_KEY[key],
        data: { code: key, httpStatus: body.status, path: shape.data.path },
        appCode: body.code,
        err: body.err,
        trace_id: ctx?.req.traceId,
      };
    },
  });

export const router = t.router;

/** Every procedure's base: no input nested too deep or holding a NUL character, on both transports (see input-guard.ts). */
const procedure = t.procedure.use(
  ({ getRawInput, next }) =>
    andThen(getRawInput(), (raw) => {
      guardInput(raw);
      return next();
    }) as ReturnType<typeof next>,
);

export const publicProcedure = procedure.meta({ public: true });

/**
 * The caller of the request; the request's span (if traced) is tagged with the user id. With `X-Scope-OrgID`
 * the caller acts in that organization (with its roles' permissions added) and the request carries its id.
 * No promise when the caller is cached and there is no organization to enter (see lib/maybe-async.ts).
 */
function authenticate(ctx: Context): MaybePromise<{ caller: Caller; req: RequestInfo }> {
  return andThen(ctx.services.auth.authenticate(ctx.req), (caller) => {
    trace.getActiveSpan()?.setAttribute('enduser.id', caller.id);
    if (ctx.req.orgHeader === undefined) return { caller, req: ctx.req };
    return andThen(ctx.services.orgScopes.enter(caller, ctx.req.orgHeader), (scoped) => ({
      caller: scoped.caller,
      req: { ...ctx.req, orgId: scoped.orgId },
    }));
  });
}

/**
 * Goes on with the authenticated caller once `check` (if any) has not thrown, once per `Idempotency-Key`
 * where one applies (idempotency.ts). Not async: the REST adapter runs a cached request through the whole
 * chain without a promise. tRPC types a middleware's answer as a promise; its own caller awaits whatever
 * comes back, so a value is as good. `next` merges the ctx it is given into the current one.
 */
function withCaller<R>(
  call: KeyedCall,
  check: ((caller: Caller) => void) | undefined,
  proceed: (auth: { caller: Caller; req: RequestInfo }) => R,
): R {
  return andThen(authenticate(call.ctx), (auth) => {
    check?.(auth.caller);
    return onceByKey(call, auth, () => proceed(auth));
  }) as R;
}

/** Any logged-in user (status and session checked). */
export const authedProcedure = procedure.use((opts) =>
  withCaller(opts, undefined, ({ caller, req }) => opts.next({ ctx: { caller, req } })),
);

// Authentication and the permission check are one middleware: every middleware level copies the call
// options in tRPC, which is measurable on hot list routes.
function guarded(allowed: (caller: Caller) => boolean, denied: () => Error, permission: string) {
  const check = (caller: Caller) => {
    if (!allowed(caller)) throw denied();
  };
  return procedure
    .meta({ permission })
    .use((opts) => withCaller(opts, check, ({ caller, req }) => opts.next({ ctx: { caller, req } })));
}

/** Logged in and holding `code`; administrators hold every permission. */
export function requirePermission(code: string) {
  return guarded(
    (c) => c.isAdmin || c.permissions.has(code),
    () => new ForbiddenError('auth.missing_permission', { code }),
    code,
  );
}

/** Logged in with the global admin role. */
export const adminProcedure = guarded(
  (c) => c.isAdmin,
  () => new ForbiddenError('auth.admin_only'),
  'admin',
);
