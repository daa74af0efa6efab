import type { RequestHooks } from './request-hooks.ts';

// The strict CSP suits every JSON and text answer; the docs page replaces it with its own (swagger-ui's
// staticCSP), which runs later in the request.
const HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
};

/** Headers on every answer (DESIGN §3), set once per request at its start. */
export const securityHeaders: RequestHooks = {
  onRequest(_request, reply) {
    reply.headers(HEADERS);
  },
};
