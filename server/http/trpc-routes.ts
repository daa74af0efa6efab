import {
  getErrorShape,
  getTRPCErrorFromUnknown,
  type AnyTRPCProcedure,
  type AnyTRPCRouter,
  type TRPCError,
  type TRPCErrorShape,
} from '@trpc/server';
import { fastifyRequestHandler } from '@trpc/server/adapters/fastify';
import { getHTTPStatusCode } from '@trpc/server/http';
import type { TRPCResponse } from '@trpc/server/rpc';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BadRequestError } from '../../lib/errors.ts';
import { jsonBodyRefusal } from '../../lib/json-limits.ts';
import { all, andThen, isPromise, type MaybePromise } from '../../lib/maybe-async.ts';
import type { Context } from '../../routers/common/context.ts';
import { serialisedOncePerFrozen } from './frozen-answers.ts';
import { procedureDef, proceduresOf } from './procedure-def.ts';
import { runProcedure } from './run-procedure.ts';

export type TrpcErrorHandler = (opts: {
  error: TRPCError;
  path: string | undefined;
  type: string;
  input: unknown;
  ctx: Context | undefined;
}) => void;

interface Options {
  router: AnyTRPCRouter;
  /** `server.max_upload_size`, for the bodies tRPC's own handler reads (multipart). */
  bodyLimit: number;
  createContext: (request: FastifyRequest, reply: FastifyReply, calls: number) => Context;
  onError: TrpcErrorHandler;
}

interface Call {
  path: string;
  procedure: AnyTRPCProcedure;
  input: unknown;
}

type Outcome = TRPCResponse<unknown, TRPCErrorShape<object>>;

const METHOD_OF = { query: 'GET', mutation: 'POST' } as const;

/** The JSON `input` of a GET (the `input` query parameter) or of a POST (the body, kept as text). */
function inputText(request: FastifyRequest): string | undefined {
  if (request.method === 'POST')
    return typeof request.body === 'string' && request.body !== '' ? request.body : undefined;
  const input = (request.query as Record<string, unknown>).input;
  return typeof input === 'string' && input !== '' ? input : undefined;
}

const wantsStream = (request: FastifyRequest) =>
  request.headers['trpc-accept'] === 'application/jsonl' ||
  Boolean(request.headers.accept?.split(',').some((t) => t.trim() === 'application/jsonl'));

const isJsonPost = (request: FastifyRequest) =>
  request.method !== 'POST' ||
  request.headers['content-type']?.split(';', 1)[0]!.trim().toLowerCase() === 'application/json';

/**
 * The calls of a request the fast path serves as tRPC would: JSON in and out, each path a query asked with GET
 * or a mutation posted. Anything else (a stream, a subscription, an unknown path, a wrong method, malformed
 * input, another content type) is undefined, and tRPC's own handler answers it.
 */
function callsOf(router: AnyTRPCRouter, request: FastifyRequest, path: string): Call[] | undefined {
  if (wantsStream(request) || !isJsonPost(request)) return undefined;
  const batch = (request.query as Record<string, unknown>).batch === '1';
  const paths = batch ? path.split(',') : [path];
  let parsed: unknown;
  const text = inputText(request);
  if (text !== undefined) {
    try {
      parsed = JSON.parse(text);
    } catch {
      return undefined;
    }
  }
  if (batch && parsed !== undefined && (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)))
    return undefined;
  const procedures = proceduresOf(router);
  const calls: Call[] = [];
  for (const [index, name] of paths.entries()) {
    const procedure = procedures[name];
    const type = procedure && procedureDef(procedure).type;
    if (!procedure || (type !== 'query' && type !== 'mutation') || METHOD_OF[type] !== request.method) return undefined;
    calls.push({
      path: name,
      procedure,
      input: batch ? (parsed as Record<string, unknown> | undefined)?.[index] : parsed,
    });
  }
  return calls;
}

/** A call's answer as tRPC's protocol has it, its error in the router's error shape. */
function outcome(
  router: AnyTRPCRouter,
  call: Call,
  ctx: Context,
  index: number,
  onError: TrpcErrorHandler,
): MaybePromise<{ outcome: Outcome; error?: TRPCError }> {
  const failure = (cause: unknown) => {
    const error = getTRPCErrorFromUnknown(cause);
    const { type } = procedureDef(call.procedure);
    onError({ error, path: call.path, type, input: call.input, ctx });
    return {
      outcome: {
        error: getErrorShape({ config: router._def._config, error, type, path: call.path, input: call.input, ctx }),
      },
      error,
    };
  };
  try {
    const data = runProcedure(call.procedure, {
      ctx,
      path: call.path,
      input: call.input,
      batchIndex: index,
    });
    return isPromise(data)
      ? data.then((d) => ({ outcome: { result: { data: d } } }), failure)
      : { outcome: { result: { data } } };
  } catch (cause) {
    return failure(cause);
  }
}

/**
 * Serves tRPC's HTTP protocol (`httpLink`, `httpBatchLink`) by calling each procedure with the runner REST uses
 * (run-procedure.ts): tRPC's own handler turns every request into a Fetch `Request` and `Response` and copies the
 * call options at each middleware, several times the CPU of the procedure itself. Requests the fast path does
 * not serve (streams for `httpBatchStreamLink`, subscriptions, and every malformed request, whose errors tRPC
 * words) go to tRPC's handler. Each procedure has a route of its own, so HTTP metrics name it
 * (`/trpc/users.list`); batches and unknown names share `/trpc/:path`.
 */
export function registerTrpcRoutes(app: FastifyInstance, { router, createContext, onError, bodyLimit }: Options): void {
  // Bodies stay text: the fast path parses them itself, and tRPC's handler expects them unparsed. Too many
  // members are refused before either parses; the depth is the input guard's, which names the field.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const refusal = jsonBodyRefusal(body as string, Number.POSITIVE_INFINITY);
    return refusal ? done(refusal, undefined) : done(null, body);
  });
  // tRPC's handler reads a multipart body itself, from the request: refused here when it announces more than
  // the limit, and cut by tRPC (maxBodySize below) when it sends more.
  app.removeContentTypeParser('multipart/form-data');
  app.addContentTypeParser('multipart/form-data', {}, (request, body, done) =>
    Number(request.headers['content-length']) > bodyLimit
      ? done(new BadRequestError('error.body_too_large', { limit: bodyLimit }), undefined)
      : done(null, body),
  );

  // The body does not depend on the path: one for every route.
  const bodyOf = serialisedOncePerFrozen();
  const serialised = (data: unknown): string => bodyOf(data, (answer) => JSON.stringify({ result: { data: answer } }));

  const fallback = (request: FastifyRequest, reply: FastifyReply, path: string) =>
    fastifyRequestHandler({
      router,
      req: request,
      res: reply,
      path,
      maxBodySize: bodyLimit,
      createContext: ({ req, res, info }: { req: FastifyRequest; res: FastifyReply; info: { calls: unknown[] } }) =>
        createContext(req, res, info.calls.length),
      onError: ({ error, path: failedPath, type, input, ctx }) =>
        onError({ error, path: failedPath, type, input, ctx: ctx as Context | undefined }),
    });

  const handle = (request: FastifyRequest, reply: FastifyReply, path: string) => {
    const calls = callsOf(router, request, path);
    if (!calls) return fallback(request, reply, path);
    const ctx = createContext(request, reply, calls.length);
    reply.header('vary', 'trpc-accept, accept').type('application/json');
    const batch = (request.query as Record<string, unknown>).batch === '1';
    return andThen(all(calls.map((call, index) => outcome(router, call, ctx, index, onError))), (done) => {
      const outcomes = done.map((d) => d.outcome);
      reply.code(
        getHTTPStatusCode(
          batch ? outcomes : outcomes[0]!,
          done.map((d) => d.error),
        ),
      );
      const texts = outcomes.map((o) => ('result' in o ? serialised(o.result.data) : JSON.stringify(o)));
      return batch ? `[${texts.join(',')}]` : texts[0]!;
    });
  };

  // No HEAD: tRPC's protocol has none, and its handler failed on one (500); like any other method it is 404.
  const procedures = Object.keys(proceduresOf(router));
  for (const path of procedures)
    app.route({
      method: ['GET', 'POST'],
      url: `/${path}`,
      exposeHeadRoute: false,
      handler: (request, reply) => handle(request, reply, path),
    });
  app.route({
    method: ['GET', 'POST'],
    url: '/:path',
    exposeHeadRoute: false,
    handler: (request, reply) => handle(request, reply, (request.params as { path: string }).path),
  });
}
