import type { FastifyInstance } from 'fastify';

const STRICT_CSP = "default-src 'none'; frame-ancestors 'none'";

/** Headers on every answer (DESIGN §3); HTML pages keep the CSP their route set (the docs page sets its own). */
export function addSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('X-Content-Type-Options', 'nosniff');
    reply.header('Referrer-Policy', 'no-referrer');
    reply.header('X-Frame-Options', 'DENY');
    const type = String(reply.getHeader('content-type') ?? '');
    if (!type.startsWith('text/html') && !reply.hasHeader('content-security-policy')) reply.header('Content-Security-Policy', STRICT_CSP);
    return payload;
  });
}
