import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { fieldError, UnauthorizedError } from '../../lib/errors.ts';
import type { Services } from '../../routers/common/services.ts';
import { USER_EXPORT_CONTENT_TYPE } from '../../routers/user-export/runner.ts';
import { requestInfo } from './request-info.ts';

const query = z.object({
  method: z.enum(['download', 'sign']).optional(),
  expires: z.string().max(16).optional(),
  signature: z.string().max(128).optional(),
});

/** `attachment` with an ASCII fallback name and the exact name in RFC 5987 form. */
export function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

/**
 * `GET /api/files/:fileKey`: streams a task artifact (docs/engine.md). With a bearer token the task's creator or an
 * administrator may fetch it, or ask `?method=sign` for a URL that works without a token for ten minutes;
 * `?expires=&signature=` is such a URL. No token and no signature → 401; not allowed → 404.
 * Registered inside the /api scope, so failures answer with the error envelope.
 */
export function registerFileRoutes(api: FastifyInstance, services: Services): void {
  api.get('/files/:fileKey', async (request, reply) => {
    const { fileKey } = request.params as { fileKey: string };
    const parsed = query.safeParse(request.query);
    if (!parsed.success) throw fieldError(String(parsed.error.issues[0]?.path[0] ?? 'query'), 'validation.invalid');
    const q = parsed.data;
    const files = services.files;
    const signed = q.signature !== undefined || q.expires !== undefined;
    const file = signed
      ? await files.forSignature(fileKey, q.expires ?? '', q.signature ?? '')
      : await files.forCaller(await services.auth.authenticate(requestInfo(request)), fileKey);
    // Signing needs a token: a signed link that could sign itself again would never expire.
    if (q.method === 'sign') {
      if (signed) throw new UnauthorizedError('auth.missing_token');
      return { code: '0', data: files.sign(file) };
    }
    const content = await files.open(file);
    return reply
      .header('content-type', file.content_type)
      .header('content-length', String(file.size))
      .header('content-disposition', contentDisposition(file.name))
      .header('cache-control', 'private, no-store')
      .send(content);
  });
}

/** A documented error answer: the envelope's schema. */
export const errorRef = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

/** The types task artifacts are written with: a download answers the one its file was stored with. */
const ARTIFACT_CONTENT_TYPES = [USER_EXPORT_CONTENT_TYPE];

/** The route's entry in the OpenAPI document (plain Fastify routes are not generated from procedures). */
export const fileRouteDocs = {
  '/files/{fileKey}': {
    get: {
      operationId: 'files-download',
      tags: ['Tasks'],
      summary: "Download a task's artifact; `?method=sign` answers a URL valid 10 minutes without a token",
      description:
        "Streams the file a task produced (its `artifact_file_key`), with the type it was stored with and `Content-Disposition: attachment` naming it. With a token, the task's creator or an administrator may fetch it, or ask `?method=sign` for a URL (with `expires` and `signature`) that fetches it without a token for 10 minutes; a signed URL cannot be signed again.",
      parameters: [
        {
          name: 'fileKey',
          in: 'path',
          required: true,
          schema: { type: 'string', minLength: 1 },
          description: 'The task’s `artifact_file_key`',
        },
        {
          name: 'method',
          in: 'query',
          required: false,
          schema: { type: 'string', enum: ['download', 'sign'] },
          description: '`sign` answers a signed URL instead of the file',
        },
        {
          name: 'expires',
          in: 'query',
          required: false,
          schema: { type: 'string', maxLength: 16 },
          description: 'From a signed URL',
        },
        {
          name: 'signature',
          in: 'query',
          required: false,
          schema: { type: 'string', maxLength: 128 },
          description: 'From a signed URL',
        },
      ],
      security: [{ bearerAuth: [] }, {}],
      responses: {
        '200': {
          description: 'The file, or with `method=sign` `{code, data: {url, expires_at}}`',
          headers: {
            'Content-Disposition': {
              description: '`attachment` with the file’s name (RFC 6266, and RFC 5987 for names beyond ASCII)',
              schema: { type: 'string' },
            },
            'Content-Length': { description: 'The file’s size in bytes', schema: { type: 'integer', minimum: 0 } },
          },
          content: {
            ...Object.fromEntries(ARTIFACT_CONTENT_TYPES.map((type) => [type, { schema: { type: 'string' } }])),
            'application/json': {
              schema: {
                type: 'object',
                required: ['code', 'data'],
                properties: {
                  code: { type: 'string', const: '0' },
                  data: {
                    type: 'object',
                    required: ['url', 'expires_at'],
                    properties: {
                      url: {
                        type: 'string',
                        format: 'uri-reference',
                        description: 'Absolute when `server.root_url` is set',
                      },
                      expires_at: { type: 'string', format: 'date-time' },
                    },
                  },
                },
              },
            },
          },
        },
        '400': errorRef('E4001: an invalid query parameter, named'),
        '401': errorRef(
          'E4011: no token and no (valid) signature, or `method=sign` on a signed URL; E4012: the token’s user is deleted, disabled or locked',
        ),
        '404': errorRef('E4041: no such file, or not yours'),
      },
    },
  },
};
