import { getTRPCErrorFromUnknown, TRPCError, type AnyTRPCProcedure } from '@trpc/server';
import { getParseFn, isObject, middlewareMarker } from '@trpc/server/unstable-core-do-not-import';
import { deepFreeze, isDeepFrozen } from '../../lib/deep-freeze.ts';
import { andThen, isPromise, type MaybePromise } from '../../lib/maybe-async.ts';
import type { Context } from '../../routers/common/context.ts';

type Result = { ok: true; data: unknown } | { ok: false; error: TRPCError };

interface CallOptions {
  ctx: Context;
  path: string;
  type: 'query' | 'mutation' | 'subscription';
  input?: unknown;
  getRawInput: () => MaybePromise<unknown>;
  signal: undefined;
  batchIndex: number;
}

interface NextOptions {
  ctx?: object;
  input?: unknown;
  getRawInput?: () => MaybePromise<unknown>;
}

type Middleware = ((
  opts: CallOptions & { meta: unknown; next: (next?: NextOptions) => MaybePromise<Result> },
) => MaybePromise<Result>) & { _type?: string };

interface ProcedureDef {
  middlewares: Middleware[];
  meta: unknown;
  inputs: unknown[];
  output?: unknown;
  resolver?: (opts: CallOptions & { meta: unknown }) => unknown;
}

type Parse = (value: unknown) => unknown;

/** What each level of a procedure's chain does: tRPC's input and output validation and its resolver call are done here. */
type Level =
  | { kind: 'input'; parse: Parse }
  | { kind: 'output'; parse: Parse; checked: WeakMap<object, unknown> }
  | { kind: 'resolve' }
  | { kind: 'use'; middleware: Middleware };

const plans = new WeakMap<ProcedureDef, Level[]>();

/**
 * tRPC's validation and resolver middlewares are async functions; done here they cost no promise when the
 * parsers and the resolver answer at once. Their parsers are those tRPC builds (`getParseFn`), their errors
 * the ones it throws. A chain whose shape is not the builder's usual one runs tRPC's own middlewares.
 */
function planOf(def: ProcedureDef): Level[] {
  let plan = plans.get(def);
  if (plan) return plan;
  const { middlewares } = def;
  const inputs = middlewares.filter((m) => m._type === 'input').length;
  const outputs = middlewares.filter((m) => m._type === 'output').length;
  const native = inputs === def.inputs.length && (outputs === 0 || (outputs === 1 && def.output !== undefined));
  let nextInput = 0;
  plan = middlewares.map((middleware, index): Level => {
    if (native && middleware._type === 'input')
      return { kind: 'input', parse: getParseFn(def.inputs[nextInput++] as never) as Parse };
    if (native && middleware._type === 'output')
      return { kind: 'output', parse: getParseFn(def.output as never) as Parse, checked: new WeakMap() };
    if (index === middlewares.length - 1 && typeof def.resolver === 'function') return { kind: 'resolve' };
    return { kind: 'use', middleware };
  });
  plans.set(def, plan);
  return plan;
}

/** `parse(value)`, with a failure (thrown or rejected) turned into `failure(cause)`. */
function validated(parse: Parse, value: unknown, failure: (cause: unknown) => TRPCError): MaybePromise<unknown> {
  let parsed: unknown;
  try {
    parsed = parse(value);
  } catch (cause) {
    throw failure(cause);
  }
  return isPromise(parsed)
    ? parsed.catch((cause: unknown) => {
        throw failure(cause);
      })
    : parsed;
}

/**
 * Output validation, once per deep-frozen answer (a cached page view): it cannot have changed since, so its
 * validated form is kept, deep-frozen too, which tells the REST adapter it may keep its serialised body.
 */
function checkedOutput(
  level: { parse: Parse; checked: WeakMap<object, unknown> },
  data: unknown,
): MaybePromise<unknown> {
  if (!isDeepFrozen(data)) return validated(level.parse, data, badOutput);
  const kept = level.checked.get(data);
  if (kept !== undefined) return kept;
  return andThen(validated(level.parse, data, badOutput), (parsed) => {
    level.checked.set(data, deepFreeze(parsed));
    return parsed;
  });
}

const badInput = (cause: unknown) => new TRPCError({ code: 'BAD_REQUEST', cause });
const badOutput = (cause: unknown) =>
  new TRPCError({ message: 'Output validation failed', code: 'INTERNAL_SERVER_ERROR', cause });

function failed(cause: unknown): Result {
  return { ok: false, error: getTRPCErrorFromUnknown(cause) };
}

// The options objects below are written out rather than spread, and two objects are merged with
// Object.assign: V8 copies `{ ...a, ...b }` on its slow path, about fifteen times the cost. These run
// several times a request.

/** The options the next level runs with. */
function continued(opts: CallOptions, n: NextOptions): CallOptions {
  return {
    ctx: n.ctx ? Object.assign({}, opts.ctx, n.ctx) : opts.ctx,
    path: opts.path,
    type: opts.type,
    input: 'input' in n ? n.input : opts.input,
    getRawInput: n.getRawInput ?? opts.getRawInput,
    signal: opts.signal,
    batchIndex: opts.batchIndex,
  };
}

/** What the resolver is called with; a middleware gets `next` as well. */
function resolverOptions(opts: CallOptions, meta: unknown) {
  return {
    ctx: opts.ctx,
    path: opts.path,
    type: opts.type,
    input: opts.input,
    getRawInput: opts.getRawInput,
    signal: opts.signal,
    batchIndex: opts.batchIndex,
    meta,
  };
}

function level(def: ProcedureDef, plan: Level[], index: number, opts: CallOptions): MaybePromise<Result> {
  const current = plan[index]!;
  switch (current.kind) {
    case 'input':
      return andThen(opts.getRawInput(), (raw) =>
        andThen(validated(current.parse, raw, badInput), (parsed) =>
          step(
            def,
            plan,
            index + 1,
            continued(opts, {
              input: isObject(opts.input) && isObject(parsed) ? Object.assign({}, opts.input, parsed) : parsed,
            }),
          ),
        ),
      );
    case 'output':
      return andThen(step(def, plan, index + 1, opts), (result) =>
        result.ok ? andThen(checkedOutput(current, result.data), (data) => ({ ...result, data })) : result,
      );
    case 'resolve':
      return andThen(
        def.resolver!(resolverOptions(opts, def.meta)),
        (data) => ({ marker: middlewareMarker, ok: true, data, ctx: opts.ctx }) as Result,
      );
    case 'use':
      return current.middleware({
        ctx: opts.ctx,
        path: opts.path,
        type: opts.type,
        input: opts.input,
        getRawInput: opts.getRawInput,
        signal: opts.signal,
        batchIndex: opts.batchIndex,
        meta: def.meta,
        next: (n?: NextOptions) => step(def, plan, index + 1, n ? continued(opts, n) : opts),
      });
  }
}

/** One level, its failure (thrown or rejected) becoming a failed result as in tRPC's caller. */
function step(def: ProcedureDef, plan: Level[], index: number, opts: CallOptions): MaybePromise<Result> {
  try {
    const result = level(def, plan, index, opts);
    return isPromise(result) ? result.catch(failed) : result;
  } catch (cause) {
    return failed(cause);
  }
}

/**
 * Calls a procedure as tRPC's own caller does: each middleware in turn, `next` continuing with the options it
 * passes. tRPC's compiled build copies the call options at every level through a helper that defines each key
 * with defineProperty, and awaits at each; here a request whose middlewares answer at once (cached caller and
 * page) runs to its answer without a promise. The middlewares of our own are called as they are.
 */
export function runProcedure(procedure: AnyTRPCProcedure, opts: CallOptions): MaybePromise<unknown> {
  const def = procedure._def as unknown as ProcedureDef;
  return andThen(step(def, planOf(def), 0, opts), (result) => {
    if (!result.ok) throw result.error;
    return result.data;
  });
}
