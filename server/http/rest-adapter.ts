import type { AnyTRPCProcedure, AnyTRPCRouter } from '@trpc/server';
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { z } from 'zod';
import { BadRequestError } from '../../lib/errors.ts';
import { andThen } from '../../lib/maybe-async.ts';
import type { Context } from '../../routers/common/context.ts';
import type { Meta } from '../../routers/common/trpc.ts';
import { serialisedOncePerFrozen } from './frozen-answers.ts';
import { procedureDef, proceduresOf } from './procedure-def.ts';
import { runProcedure } from './run-procedure.ts';

interface Route {
  path: string;
  procedure: AnyTRPCProcedure;
  meta: Meta;
  method: HTTPMethods;
  url: string;
  numeric: Set<string>;
}

function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  while (
    s instanceof z.ZodDefault ||
    s instanceof z.ZodPrefault ||
    s instanceof z.ZodOptional ||
    s instanceof z.ZodNullable
  )
    s = s.def.innerType as z.ZodType;
  return s;
}

/** Query-string fields a schema wants as numbers; query values arrive as strings. */
function numericFields(input: unknown): Set<string> {
  const s = input instanceof z.ZodType ? unwrap(input) : undefined;
  if (!(s instanceof z.ZodObject)) return new Set();
  return new Set(
    Object.entries(s.shape)
      .filter(([, v]) => unwrap(v as z.ZodType) instanceof z.ZodNumber)
      .map(([k]) => k),
  );
}

/** Every procedure with OpenAPI meta, in the form the REST adapter and the route inventory need. */
export function restRoutes(router: AnyTRPCRouter): Route[] {
  return Object.entries(proceduresOf(router)).flatMap(([path, proc]) => {
    const { meta, inputs } = proc ? procedureDef(proc) : {};
    if (!proc || !meta?.openapi) return [];
    return [
      {
        path,
        procedure: proc,
        meta,
        method: meta.openapi.method,
        url: meta.openapi.path.replace(/\{(\w+)\}/g, ':$1'),
        numeric: numericFields(inputs?.[0]),
      },
    ];
  });
}

type JsonSchema = { [key: string]: unknown };

/**
 * Shapes a JSON schema for serialisation only: `format` is dropped and a nullable `anyOf` becomes a type
 * list, because fast-json-stringify picks `anyOf` branches by running a validator on every value.
 */
function forSerializer(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(forSerializer);
  if (!node || typeof node !== 'object') return node;
  const { format: _format, ...rest } = node as JsonSchema;
  const anyOf = rest.anyOf as JsonSchema[] | undefined;
  if (anyOf?.length === 2 && anyOf.some((b) => b.type === 'null')) {
    const other = anyOf.find((b) => b.type !== 'null')!;
    if (typeof other.type === 'string' && other.type !== 'object' && other.type !== 'array') {
      const { anyOf: _anyOf, ...without } = rest;
      return forSerializer({ ...without, ...other, type: [other.type, 'null'] });
    }
  }
  return Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, forSerializer(v)]));
}

/**
 * The JSON schema of a route's enveloped answer, so Fastify serialises it with its compiled serializer
 * instead of JSON.stringify (a fifth of the CPU of a list request). The procedure has already validated
 * its output against the same zod schema.
 */
function responseSchema(route: Route): JsonSchema | undefined {
  const { output } = procedureDef(route.procedure);
  if (!(output instanceof z.ZodType)) return undefined;
  const code = z.object({ code: z.literal('0') });
  const enveloped =
    route.meta.list && output instanceof z.ZodObject ? code.extend(output.shape) : code.extend({ data: output });
  try {
    const { $schema: _dialect, ...schema } = z.toJSONSchema(enveloped, {
      io: 'output',
      unrepresentable: 'any',
    }) as JsonSchema;
    return forSerializer(schema) as JsonSchema;
  } catch {
    return undefined;
  }
}

function queryInput(query: Record<string, unknown>, numeric: Set<string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(query)) {
    const v = query[k];
    // A numeric string becomes a number; anything else is left for zod to reject with the field's name.
    out[k] = numeric.has(k) && typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v;
  }
  return out;
}

function bodyInput(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body))
    throw new BadRequestError('validation.field', { field: 'body', reason: 'must be a JSON object' });
  return body as Record<string, unknown>;
}

/**
 * Serves each procedure's REST path as a native Fastify route calling the procedure directly: the stock
 * trpc-to-openapi HTTP adapter costs ~4x in throughput (docs/architecture.md). Answers carry the envelope (README "API overview").
 */
export function registerRestRoutes(
  app: FastifyInstance,
  router: AnyTRPCRouter,
  createContext: (request: FastifyRequest, reply: FastifyReply) => Context,
): void {
  for (const route of restRoutes(router)) {
    const bodyOf = serialisedOncePerFrozen();
    const readsQuery = route.method === 'GET' || route.method === 'DELETE';
    const status = route.meta.successStatus ?? 200;
    // Compiled on the route's first answer rather than at start: a process serves few of its routes, and
    // compiling every serializer up front held ~4 MB of the idle memory budget.
    let serializer: ((body: unknown) => string) | undefined;
    const serialize = (reply: FastifyReply, body: unknown): string => {
      if (serializer === undefined) {
        const schema = responseSchema(route);
        serializer = schema ? reply.compileSerializationSchema(schema, String(status)) : JSON.stringify;
      }
      return serializer(body);
    };
    app.route({
      method: route.method,
      url: route.url,
      // Not async: a request the caches answer runs to its reply without a promise (see run-procedure.ts).
      handler: (request, reply) => {
        const params = request.params as Record<string, string>;
        // Object.assign rather than `{ ...a, ...b }`, which V8 copies on a slow path.
        const input = readsQuery
          ? Object.assign(queryInput(request.query as Record<string, unknown>, route.numeric), params)
          : Object.assign({}, bodyInput(request.body), params);
        const output = runProcedure(route.procedure, {
          ctx: createContext(request, reply),
          path: route.path,
          input,
          batchIndex: 0,
        });
        return andThen(output, (data) => {
          reply.code(status).type('application/json; charset=utf-8');
          return bodyOf(data, (answer) =>
            serialize(reply, route.meta.list ? { code: '0', ...(answer as object) } : { code: '0', data: answer }),
          );
        });
      },
    });
  }
}
