import type { AnyTRPCRouter } from '@trpc/server';
import { generateOpenApiDocument } from 'trpc-to-openapi';
import { appRouter } from '../../routers/app-router.ts';
import { acceptsIdempotencyKey, IDEMPOTENCY_HEADER, REPLAYED_HEADER } from '../../routers/shared/idempotency.ts';
import { fileRouteDocs } from './files.ts';
import { oauthRouteDocs } from './oauth-routes.ts';
import { restRoutes } from './rest-adapter.ts';

type Json = Record<string, unknown>;

const ERROR_SCHEMA = {
  type: 'object',
  required: ['code', 'err'],
  properties: {
    code: { type: 'string', description: 'E4001, E4011, E4012, E4031, E4041, E4291, E5001 or E5031' },
    err: { type: 'string', description: 'Short message in the caller’s language' },
    trace_id: { type: 'string' },
  },
};

/** Every authenticated operation may act in an organization (DESIGN §4). */
const ORG_HEADER_PARAMETER = {
  name: 'X-Scope-OrgID',
  in: 'header',
  required: false,
  description: "The organization the request acts in: permissions add the caller's roles there; tasks and audit records made carry it, and task and audit lists show only its own",
  schema: { type: 'string', format: 'uuid' },
};

/** Every authenticated POST outside `/auth/*` (README, "Idempotency-Key"). */
const IDEMPOTENCY_KEY_PARAMETER = {
  name: IDEMPOTENCY_HEADER,
  in: 'header',
  required: false,
  description:
    'Runs the request once: for 24 hours a repeat by the same user with the same key and body answers the first answer (2xx, or a 4xx other than 401/403/429) without running again, with `Idempotent-Replayed: true`; the key with another body → 400 E4001; a repeat while the first still runs waits for it up to half of `server.write_timeout`, then 400 E4001',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9\\-_.:~+/=]+$' },
};

const REPLAYED_RESPONSE_HEADER = {
  [REPLAYED_HEADER]: { description: 'Present (`true`) when the answer is the one stored for the Idempotency-Key', schema: { type: 'string', enum: ['true'] } },
};

const ERROR_RESPONSES: Record<string, string> = {
  '400': 'E4001: invalid input, naming the field',
  '401': 'E4011: missing or invalid token, or ended session; E4012: the token’s user is deleted, disabled or locked',
  '403': 'E4031: missing permission, or not a member of the X-Scope-OrgID organization',
  '404': 'E4041: not found or not visible (also an unknown X-Scope-OrgID organization)',
  '429': 'E4291: rate limited',
  '500': 'E5001: internal error',
};

/**
 * The OpenAPI 3.1 document: trpc-to-openapi describes the procedures, and this shapes it to what the REST
 * adapter really answers (the SPEC envelope, 201 on creates, the error envelope, the permission each needs).
 */
export function buildOpenApiDocument(router: AnyTRPCRouter, opts: { version: string; baseUrl: string }): Json {
  const doc = generateOpenApiDocument(router, {
    title: 'Console API',
    description: 'Administration backend: users, roles, permissions, settings, audit logs and background tasks. Every answer uses the envelope `{code, data}` / `{code, err}`.',
    version: opts.version,
    baseUrl: opts.baseUrl,
    securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
  }) as unknown as Json;
  const schemas = ((doc.components as Json | undefined)?.schemas ?? {}) as Json;
  for (const name of Object.keys(schemas)) if (name.startsWith('error.')) delete schemas[name];
  schemas.Error = ERROR_SCHEMA;

  const paths = doc.paths as Record<string, Record<string, Json>>;
  for (const route of restRoutes(router)) {
    const openapiPath = route.meta.openapi!.path;
    const op = paths[openapiPath]?.[route.method.toLowerCase()];
    if (!op) continue;
    const ok = (op.responses as Json)['200'] as Json;
    const inner = ((ok.content as Json)['application/json'] as Json).schema as Json;
    const wrapped = route.meta.list
      ? { ...inner, required: ['code', ...((inner.required as string[]) ?? [])], properties: { code: { type: 'string', const: '0' }, ...(inner.properties as Json) } }
      : { type: 'object', required: ['code', 'data'], properties: { code: { type: 'string', const: '0' }, data: inner } };
    const status = String(route.meta.successStatus ?? 200);
    const keyed = route.method === 'POST' && acceptsIdempotencyKey(route.meta);
    const responses: Json = { [status]: { description: 'Success', content: { 'application/json': { schema: wrapped } }, ...(keyed ? { headers: REPLAYED_RESPONSE_HEADER } : {}) } };
    for (const [code, description] of Object.entries(ERROR_RESPONSES)) {
      if (route.meta.public && (code === '401' || code === '403')) continue;
      responses[code] = { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    }
    op.responses = responses;
    if (route.meta.public) op.security = [];
    else {
      op.security = [{ bearerAuth: [] }];
      op.parameters = [...((op.parameters as Json[] | undefined) ?? []), ORG_HEADER_PARAMETER, ...(keyed ? [IDEMPOTENCY_KEY_PARAMETER] : [])];
    }
    if (route.meta.permission) op['x-permission'] = route.meta.permission;
  }
  return doc;
}

/** The service's whole document: every procedure plus the plain file and OAuth redirect routes. */
export function serviceDocument(version: string, baseUrl: string): Json {
  const document = buildOpenApiDocument(appRouter, { version, baseUrl });
  const paths = document.paths as Record<string, Json>;
  // Merged per method: the OAuth callback's GET is a plain route, its POST a procedure.
  for (const [path, item] of Object.entries({ ...fileRouteDocs, ...oauthRouteDocs })) paths[path] = { ...paths[path], ...item };
  return document;
}
