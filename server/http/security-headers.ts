import type { RequestHooks } from './request-hooks.ts';

// The strict CSP suits every JSON and text answer; the docs page replaces it with its own (swagger-ui's
// staticCSP), which runs later in the request.
const HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
};

/**
 * Headers on every answer, set once per request at its start. Not @fastify/helmet, which costs several times as
 * much per request (docs/performance.md "Security headers", tools/bench/security-headers.ts).
 */
export const securityHeaders: RequestHooks = {
  onRequest(_request, reply) {
    reply.headers(HEADERS);
  },
};
