import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { fieldError, UnauthorizedError } from '../../lib/errors.ts';
import type { Services } from '../../routers/shared/services.ts';
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
 * `GET /api/files/:fileKey`: streams a task artifact (DESIGN §6). With a bearer token the task's creator or an
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

/** The route's entry in the OpenAPI document (plain Fastify routes are not generated from procedures). */
export const fileRouteDocs = {
  '/files/{fileKey}': {
    get: {
      tags: ['Tasks'],
      summary: "Download a task's artifact; `?method=sign` answers a URL valid 10 minutes without a token",
      parameters: [
        { name: 'fileKey', in: 'path', required: true, schema: { type: 'string' } },
        { name: 'method', in: 'query', required: false, schema: { type: 'string', enum: ['download', 'sign'] } },
        { name: 'expires', in: 'query', required: false, schema: { type: 'string' }, description: 'From a signed URL' },
        { name: 'signature', in: 'query', required: false, schema: { type: 'string' }, description: 'From a signed URL' },
      ],
      security: [{ bearerAuth: [] }, {}],
      responses: {
        '200': {
          description: 'The file (with `Content-Disposition`), or with `method=sign` `{code, data: {url, expires_at}}`',
          content: {
            'application/octet-stream': { schema: { type: 'string', format: 'binary' } },
            'application/json': {
              schema: {
                type: 'object',
                required: ['code', 'data'],
                properties: { code: { type: 'string', const: '0' }, data: { type: 'object', properties: { url: { type: 'string' }, expires_at: { type: 'string', format: 'date-time' } } } },
              },
            },
          },
        },
        '401': { description: 'E4011: no token and no (valid) signature', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
        '404': { description: 'E4041: no such file, or not yours', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
      },
    },
  },
};
