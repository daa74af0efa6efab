import type { AnyTRPCProcedure, AnyTRPCRouter, TRPCError } from '@trpc/server';
import type { MaybePromise } from '../../lib/maybe-async.ts';
import type { Context } from '../../routers/common/context.ts';
import type { Meta } from '../../routers/common/trpc.ts';

// tRPC keeps a procedure's definition in `_def`, which it marks internal and publishes no type for. The runners
// read it here and nowhere else; test/trpc-protocol.test.ts holds every procedure's answers on both transports
// to tRPC's own caller, so an upgrade that moves these fields fails there.

/** The options tRPC's caller hands each level of a procedure's chain. */
export interface CallOptions {
  ctx: Context;
  path: string;
  type: ProcedureDef['type'];
  input?: unknown;
  getRawInput: () => MaybePromise<unknown>;
  signal: undefined;
  batchIndex: number;
}

/** What a middleware may pass to `next`. */
export interface NextOptions {
  ctx?: object;
  input?: unknown;
  getRawInput?: () => MaybePromise<unknown>;
}

/** What each level answers (tRPC's middleware result). */
export type Result = { ok: true; data: unknown } | { ok: false; error: TRPCError };

export type Middleware = ((
  opts: CallOptions & { meta: unknown; next: (next?: NextOptions) => MaybePromise<Result> },
) => MaybePromise<Result>) & { _type?: string };

export interface ProcedureDef {
  type: 'query' | 'mutation' | 'subscription';
  meta: Meta | undefined;
  /** The input parsers, in the order `.input()` added them. */
  inputs: unknown[];
  /** The output parser, if the procedure has one. */
  output?: unknown;
  /**
   * The chain in order: the base's and the procedure's middlewares, tRPC's validators among them, the
   * resolver's call last.
   */
  middlewares: Middleware[];
  resolver?: (opts: CallOptions & { meta: unknown }) => unknown;
}

export function procedureDef(procedure: AnyTRPCProcedure): ProcedureDef {
  return procedure._def as unknown as ProcedureDef;
}

/** Every procedure of the router by its path (`users.list`). */
export function proceduresOf(router: AnyTRPCRouter): Record<string, AnyTRPCProcedure | undefined> {
  return router._def.procedures as Record<string, AnyTRPCProcedure | undefined>;
}
