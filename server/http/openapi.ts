import type { AnyTRPCRouter } from '@trpc/server';
import { generateOpenApiDocument } from 'trpc-to-openapi';
import * as errors from '../../lib/errors.ts';
import { appRouter } from '../../routers/app-router.ts';
import { acceptsIdempotencyKey, IDEMPOTENCY_HEADER, REPLAYED_HEADER } from '../../routers/common/idempotency.ts';
import type { Meta } from '../../routers/common/trpc.ts';
import { fileRouteDocs } from './files.ts';
import { errorResponse } from './openapi-parts.ts';
import { oauthRouteDocs } from './oauth-routes.ts';
import { restRoutes } from './rest-adapter.ts';
import { taskEventRouteDocs } from './task-events-route.ts';
import { auditExportRouteDocs } from './audit-export-route.ts';

type Json = Record<string, unknown>;

/** Every code the error envelope carries, from lib/errors.ts: one per concrete AppError class. */
export const ERROR_CODES: { code: string; status: number }[] = (Object.values(errors) as unknown[])
  .filter(
    (value): value is new (key: 'error.bad_request') => errors.AppError =>
      typeof value === 'function' && value.prototype instanceof errors.AppError,
  )
  .map((Class) => new Class('error.bad_request'))
  .map(({ code, status }) => ({ code, status }))
  .sort((a, b) => a.code.localeCompare(b.code));

const ERROR_SCHEMA = {
  type: 'object',
  required: ['code', 'err'],
  properties: {
    code: {
      type: 'string',
      enum: ERROR_CODES.map((e) => e.code),
      description: 'The error code (README, API overview): the HTTP status followed by a number',
    },
    err: { type: 'string', description: 'Short message in the caller’s language' },
    trace_id: { type: 'string', description: 'The request’s trace id, present while tracing is on' },
  },
};

const TAGS = [
  {
    name: 'Authentication',
    description: 'Logging in (password, MFA by email, OAuth), sessions and their tokens, password changes and resets',
  },
  { name: 'Users', description: 'User accounts with their global roles, and the CSV export of them' },
  {
    name: 'Roles',
    description:
      'Named sets of permission codes, global (assigned on users) or belonging to one organization (assigned through its members)',
  },
  {
    name: 'Organizations',
    description:
      'Organizations, their members and the members’ roles in them; a request acts in one with `X-Scope-OrgID`',
  },
  { name: 'Permissions', description: 'The catalogue of permission codes roles hold' },
  {
    name: 'System settings',
    description:
      'Settings kept in the database (changed at run time), the SMTP settings, and where task logs are stored',
  },
  {
    name: 'Audit logs',
    description: 'The record of logins and of every change: who, what, from where, before and after',
  },
  {
    name: 'Tasks',
    description:
      'Background tasks (docs/engine.md): status, progress, logs, cancel and retry, and the files they produce',
  },
  { name: 'Task schedules', description: 'Cron schedules defined in code, each creating a task when it fires' },
];

const RATE_LIMIT_WHILE =
  'Sent while `rate_limit.enabled` is true (the default) on answers to requests whose body parsed';
const HEADERS = {
  'X-RateLimit-Limit': {
    description: `Requests allowed per one-minute window: \`rate_limit.global_per_minute\`, or on a login the tighter of it and \`rate_limit.login_per_minute\`. ${RATE_LIMIT_WHILE}`,
    schema: { type: 'integer', minimum: 0 },
  },
  'X-RateLimit-Remaining': {
    description: `Requests left in the current window. ${RATE_LIMIT_WHILE}`,
    schema: { type: 'integer', minimum: 0 },
  },
  'X-RateLimit-Reset': {
    description: `When the current window ends, in Unix seconds. ${RATE_LIMIT_WHILE}`,
    schema: { type: 'integer', minimum: 0 },
  },
  'Retry-After': {
    description: 'Seconds until the window ends and requests are counted afresh',
    schema: { type: 'integer', minimum: 1 },
  },
  [REPLAYED_HEADER]: {
    description: 'Present (`true`) when the answer is the one stored for the Idempotency-Key',
    schema: { type: 'string', enum: ['true'] },
  },
};
const headerRef = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });
const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': headerRef('X-RateLimit-Limit'),
  'X-RateLimit-Remaining': headerRef('X-RateLimit-Remaining'),
  'X-RateLimit-Reset': headerRef('X-RateLimit-Reset'),
};

const PARAMETERS = {
  OrgScope: {
    name: 'X-Scope-OrgID',
    in: 'header',
    required: false,
    description:
      "The organization the request acts in: permissions add the caller's roles there; tasks and audit records made carry it, and task and audit lists show only its own",
    schema: { type: 'string', format: 'uuid' },
  },
  /** Every authenticated POST outside `/auth/*` (README, "Idempotency-Key"). */
  IdempotencyKey: {
    name: IDEMPOTENCY_HEADER,
    in: 'header',
    required: false,
    description:
      'Runs the request once: for 24 hours a repeat by the same user with the same key and body answers the first answer (2xx, or a 4xx other than 401/403/429) without running again, with `Idempotent-Replayed: true`; the key with another body → 400 E4001; a repeat while the first still runs waits for it up to half of `server.write_timeout`, then 400 E4001; a user may claim at most `quota.idempotency_keys_per_day` new keys in 24 hours (429 E4291 beyond)',
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9\\-_.:~+/=]+$' },
  },
};
const parameterRef = (name: keyof typeof PARAMETERS) => ({ $ref: `#/components/parameters/${name}` });

const ERROR_RESPONSES: Record<string, string> = {
  '400': 'E4001: invalid input, naming the field',
  '401': 'E4011: missing or invalid token, or ended session; E4012: the token’s user is deleted, disabled or locked',
  '403': 'E4031: missing permission, or not a member of the X-Scope-OrgID organization',
  '404': 'E4041: not found or not visible (also an unknown X-Scope-OrgID organization)',
  '408': 'E4081: the request did not arrive whole within `server.read_timeout`; the connection is closed',
  '429': 'E4291: rate limited',
  '431': 'E4311: the request headers are larger than the server reads (16 KB); the connection is closed',
  '500': 'E5001: internal error',
  '503':
    'E5031: unavailable (the answer took longer than `server.write_timeout`, the node is shutting down, or the database cannot be reached)',
};
/** Any request under /api may meet these, whatever the route. */
const ANY_ROUTE_ERRORS = ['408', '429', '431', '500', '503'];
const KEYS_QUOTA = 'a new Idempotency-Key past the user’s `quota.idempotency_keys_per_day` in 24 hours';

/** A route's 429: the rate limits, and the quotas it applies. */
const tooMany = (meta: Meta, keyed: boolean) =>
  [ERROR_RESPONSES['429'], meta.quota, keyed ? KEYS_QUOTA : undefined].filter(Boolean).join('; ');

/** Who may call the operation, told in its description (swagger-ui does not show `x-permission`). */
function access(meta: Meta): string {
  if (meta.public) return 'No token needed.';
  if (meta.permission === 'admin') return 'Administrators only.';
  if (meta.permission) return `Needs the \`${meta.permission}\` permission (administrators hold every one).`;
  return 'Any logged-in user.';
}

/**
 * The OpenAPI 3.1 document: trpc-to-openapi describes the procedures, and this shapes it to what the REST
 * adapter really answers (the README envelope, 201 on creates, the error envelope, the permission each needs).
 */
export function buildOpenApiDocument(router: AnyTRPCRouter, opts: { version: string; baseUrl: string }): Json {
  const doc = generateOpenApiDocument(router, {
    title: 'Console API',
    description:
      'Administration backend: users, roles, permissions, settings, audit logs and background tasks. Every answer uses the envelope `{code, data}` / `{code, err}`.',
    version: opts.version,
    baseUrl: opts.baseUrl,
    securitySchemes: {
      bearerAuth: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: 'The token POST /auth/login answers',
      },
    },
  }) as unknown as Json;
  doc.info = { ...(doc.info as Json), license: { name: 'MIT', identifier: 'MIT' } };
  doc.tags = TAGS;
  const components = doc.components as Json;
  const schemas = (components.schemas ?? {}) as Json;
  for (const name of Object.keys(schemas)) if (name.startsWith('error.')) delete schemas[name];
  schemas.Error = ERROR_SCHEMA;
  components.headers = HEADERS;
  components.parameters = PARAMETERS;

  const paths = doc.paths as Record<string, Record<string, Json>>;
  for (const route of restRoutes(router)) {
    const openapiPath = route.meta.openapi!.path;
    const op = paths[openapiPath]?.[route.method.toLowerCase()];
    if (!op) continue;
    const ok = (op.responses as Json)['200'] as Json;
    const inner = ((ok.content as Json)['application/json'] as Json).schema as Json;
    const wrapped = route.meta.list
      ? {
          ...inner,
          required: ['code', ...((inner.required as string[]) ?? [])],
          properties: { code: { type: 'string', const: '0' }, ...(inner.properties as Json) },
        }
      : {
          type: 'object',
          required: ['code', 'data'],
          properties: { code: { type: 'string', const: '0' }, data: inner },
        };
    const status = String(route.meta.successStatus ?? 200);
    const keyed = route.method === 'POST' && acceptsIdempotencyKey(route.meta);
    const responses: Json = {
      [status]: {
        description: 'Success',
        content: { 'application/json': { schema: wrapped } },
        ...(keyed ? { headers: { [REPLAYED_HEADER]: headerRef(REPLAYED_HEADER) } } : {}),
      },
    };
    for (const [code, description] of Object.entries(ERROR_RESPONSES)) {
      if (route.meta.public && (code === '401' || code === '403')) continue;
      responses[code] = errorResponse(code === '429' ? tooMany(route.meta, keyed) : description);
    }
    op.responses = responses;
    op.description = [route.meta.openapi!.description, access(route.meta)].filter(Boolean).join('\n\n');
    if (route.meta.public) op.security = [];
    else {
      op.security = [{ bearerAuth: [] }];
      op.parameters = [
        ...((op.parameters as Json[] | undefined) ?? []),
        parameterRef('OrgScope'),
        ...(keyed ? [parameterRef('IdempotencyKey')] : []),
      ];
    }
    if (route.meta.permission) op['x-permission'] = route.meta.permission;
  }
  return doc;
}

/** Every answer under /api passes the rate limiter, and any route may meet the errors of ANY_ROUTE_ERRORS. */
function addCommonResponses(paths: Record<string, Record<string, Json>>): void {
  for (const item of Object.values(paths)) {
    for (const op of Object.values(item)) {
      const responses = op.responses as Record<string, Json>;
      for (const code of ANY_ROUTE_ERRORS) responses[code] ??= errorResponse(ERROR_RESPONSES[code]!);
      for (const [code, response] of Object.entries(responses)) {
        const headers = {
          ...(response.headers as Json | undefined),
          ...RATE_LIMIT_HEADERS,
          ...(code === '429' ? { 'Retry-After': headerRef('Retry-After') } : {}),
        };
        responses[code] = { ...response, headers };
      }
    }
  }
}

/** The service's whole document: every procedure plus the plain file, OAuth redirect and task event routes. */
export function serviceDocument(version: string, baseUrl: string): Json {
  const document = buildOpenApiDocument(appRouter, { version, baseUrl });
  const paths = document.paths as Record<string, Record<string, Json>>;
  // Merged per method: the OAuth callback's GET is a plain route, its POST a procedure.
  for (const [path, item] of Object.entries({
    ...fileRouteDocs,
    ...oauthRouteDocs,
    ...taskEventRouteDocs,
    ...auditExportRouteDocs,
  }))
    paths[path] = { ...paths[path], ...structuredClone(item) };
  addCommonResponses(paths);
  return document;
}
