import { getTRPCErrorFromUnknown, TRPCError, type AnyTRPCProcedure } from '@trpc/server';
import { getParseFn, isObject, middlewareMarker } from '@trpc/server/unstable-core-do-not-import';
import { andThen, isPromise, type MaybePromise } from '../../lib/maybe-async.ts';
import type { Context } from '../../routers/common/context.ts';
import { rowSchemaOf, validatedOncePerFrozen } from './frozen-answers.ts';
import {
  procedureDef,
  type CallOptions,
  type Middleware,
  type NextOptions,
  type ProcedureDef,
  type Result,
} from './procedure-def.ts';

// tRPC's middleware loop, as its own caller runs it: each level in turn, `next` going on with the options it is
// given. tRPC's compiled build copies the call options at every level with a helper that defines each key through
// defineProperty, and awaits at each; this loop runs a request whose levels answer at once (a cached caller and
// page) to its answer without a promise (lib/maybe-async.ts says why that matters).

type Parse = (value: unknown) => unknown;

/**
 * What a level of the chain does. tRPC's input and output validators and its resolver call are async functions;
 * they are done here, with the parsers tRPC builds (`getParseFn`) and the errors it throws, so that they cost no
 * promise when the parser and the resolver answer at once. The procedures' own middlewares run as they are.
 */
type Level =
  | { kind: 'input'; parse: Parse }
  | { kind: 'output'; validate: (data: unknown) => MaybePromise<unknown> }
  | { kind: 'resolve' }
  | { kind: 'use'; middleware: Middleware };

const chains = new WeakMap<ProcedureDef, Level[]>();

/**
 * The levels of a procedure's chain, made once. A chain of a shape the builder does not make runs tRPC's own
 * validators.
 */
function chainOf(def: ProcedureDef): Level[] {
  let chain = chains.get(def);
  if (chain) return chain;
  const { middlewares } = def;
  const inputs = middlewares.filter((m) => m._type === 'input').length;
  const outputs = middlewares.filter((m) => m._type === 'output').length;
  const native = inputs === def.inputs.length && (outputs === 0 || (outputs === 1 && def.output !== undefined));
  let nextInput = 0;
  chain = middlewares.map((middleware, index): Level => {
    if (native && middleware._type === 'input')
      return { kind: 'input', parse: getParseFn(def.inputs[nextInput++] as never) as Parse };
    if (native && middleware._type === 'output') {
      const parse = getParseFn(def.output as never) as Parse;
      const rowSchema = rowSchemaOf(def.output);
      const parseRow = rowSchema && (getParseFn(rowSchema as never) as Parse);
      return {
        kind: 'output',
        validate: validatedOncePerFrozen(
          (data) => validated(parse, data, badOutput),
          parseRow && ((row) => validated(parseRow, row, badOutput)),
        ),
      };
    }
    if (index === middlewares.length - 1 && typeof def.resolver === 'function') return { kind: 'resolve' };
    return { kind: 'use', middleware };
  });
  chains.set(def, chain);
  return chain;
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

/** What a middleware is called with; the resolver gets the same with no `next`. */
function levelOptions<Next>(opts: CallOptions, meta: unknown, next: Next) {
  return {
    ctx: opts.ctx,
    path: opts.path,
    type: opts.type,
    input: opts.input,
    getRawInput: opts.getRawInput,
    signal: opts.signal,
    batchIndex: opts.batchIndex,
    meta,
    next,
  };
}

function runLevel(def: ProcedureDef, chain: Level[], index: number, opts: CallOptions): MaybePromise<Result> {
  const level = chain[index]!;
  switch (level.kind) {
    case 'input':
      return andThen(opts.getRawInput(), (raw) =>
        andThen(validated(level.parse, raw, badInput), (parsed) =>
          step(
            def,
            chain,
            index + 1,
            continued(opts, {
              input: isObject(opts.input) && isObject(parsed) ? Object.assign({}, opts.input, parsed) : parsed,
            }),
          ),
        ),
      );
    case 'output':
      return andThen(step(def, chain, index + 1, opts), (result) =>
        result.ok ? andThen(level.validate(result.data), (data) => ({ ...result, data })) : result,
      );
    case 'resolve':
      return andThen(
        def.resolver!(levelOptions(opts, def.meta, undefined)),
        (data) => ({ marker: middlewareMarker, ok: true, data, ctx: opts.ctx }) as Result,
      );
    case 'use':
      return level.middleware(
        levelOptions(opts, def.meta, (n?: NextOptions) => step(def, chain, index + 1, n ? continued(opts, n) : opts)),
      );
  }
}

/** One level, its failure (thrown or rejected) becoming a failed result as in tRPC's caller. */
function step(def: ProcedureDef, chain: Level[], index: number, opts: CallOptions): MaybePromise<Result> {
  try {
    const result = runLevel(def, chain, index, opts);
    return isPromise(result) ? result.catch(failed) : result;
  } catch (cause) {
    return failed(cause);
  }
}

/** One call of a procedure, as REST and /trpc make it. */
export interface ProcedureCall {
  ctx: Context;
  /** The procedure's path (`users.list`). */
  path: string;
  /** The input as the request carried it, before any validation. */
  input: unknown;
  /** Its place in a batch (0 outside one). */
  batchIndex: number;
}

/**
 * Calls a procedure as tRPC's own caller does, minus the proxy it builds per request: its data, or its error
 * thrown (a TRPCError). A promise only where a level of the chain answered with one.
 */
export function runProcedure(procedure: AnyTRPCProcedure, call: ProcedureCall): MaybePromise<unknown> {
  const def = procedureDef(procedure);
  const { input } = call;
  const opts: CallOptions = {
    ctx: call.ctx,
    path: call.path,
    type: def.type,
    getRawInput: () => input,
    signal: undefined,
    batchIndex: call.batchIndex,
  };
  return andThen(step(def, chainOf(def), 0, opts), (result) => {
    if (!result.ok) throw result.error;
    return result.data;
  });
}
