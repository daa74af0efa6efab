import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { fieldError } from '../../lib/errors.ts';
import { EXPORT_CONTENT_TYPES, EXPORT_FIELDS } from '../../routers/audit/export.ts';
import { LIST_PERMISSION } from '../../routers/audit/service.ts';
import { exportAuditInput } from '../../routers/audit/schemas.ts';
import type { Services } from '../../routers/common/services.ts';
import { contentDisposition } from './files.ts';
import { errorResponse } from './openapi-parts.ts';
import { requestInfo } from './request-info.ts';

/**
 * `GET /api/audit-logs/export`: the records the list's filters match, in seq order with their chain fields, as
 * JSON lines or CSV, streamed (docs/audit-chain.md). Failures before the stream starts answer the usual
 * envelope. Registered inside the /api scope.
 */
export function registerAuditExportRoute(api: FastifyInstance, services: Services): void {
  api.get('/audit-logs/export', async (request, reply) => {
    const parsed = exportAuditInput.safeParse(request.query);
    if (!parsed.success) throw fieldError(String(parsed.error.issues[0]?.path[0] ?? 'query'), 'validation.invalid');
    const req = requestInfo(request);
    const caller = await services.auth.authenticate(req);
    const scoped = req.orgHeader === undefined ? undefined : await services.orgScopes.enter(caller, req.orgHeader);
    const text = await services.auditLogs.export(parsed.data, scoped?.caller ?? caller, {
      ...req,
      orgId: scoped?.orgId,
    });
    const format = parsed.data.format;
    return reply
      .header('content-type', EXPORT_CONTENT_TYPES[format])
      .header('content-disposition', contentDisposition(`audit-log.${format}`))
      .header('cache-control', 'private, no-store')
      .send(Readable.from(text));
  });
}

const inputShape = z.toJSONSchema(exportAuditInput, { io: 'input' }) as {
  properties: Record<string, Record<string, unknown>>;
  required?: string[];
};

/** The route's entry in the OpenAPI document (a stream is a plain Fastify route, not a procedure). */
export const auditExportRouteDocs = {
  '/audit-logs/export': {
    get: {
      operationId: 'audit-logs-export',
      tags: ['Audit logs'],
      summary: 'Export audit records with their hash chain fields, streamed as JSON lines or CSV',
      description: `The records \`GET /audit-logs\` would list for the same filters (and \`X-Scope-OrgID\`), oldest first by \`seq\`, up to the newest record when the export began, each with \`seq\`, \`prev_hash\` and \`hash\` so it can be verified outside the service (docs/audit-chain.md). Fields: ${EXPORT_FIELDS.join(', ')}; in CSV a null is an empty field and \`details\` is JSON text. The export is itself audited.`,
      parameters: [
        ...Object.entries(inputShape.properties).map(([name, schema]) => ({
          name,
          in: 'query',
          required: false,
          schema,
        })),
        { $ref: '#/components/parameters/OrgScope' },
      ],
      security: [{ bearerAuth: [] }],
      'x-permission': LIST_PERMISSION,
      responses: {
        '200': {
          description: 'The records, one per line',
          content: {
            [EXPORT_CONTENT_TYPES.jsonl]: { schema: { type: 'string' } },
            'text/csv': { schema: { type: 'string' } },
          },
        },
        '400': errorResponse('E4001: an invalid query parameter, named'),
        '401': errorResponse('E4011: no or an invalid token; E4012: the user is deleted, disabled or locked'),
        '403': errorResponse('E4031: the caller lacks `audit_log:list` (globally or in the organization in use)'),
      },
    },
  },
};
