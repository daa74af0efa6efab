import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { clientNetwork } from '../../lib/client-network.ts';
import { TooManyRequestsError } from '../../lib/errors.ts';
import { RateLimiter, type Hit } from '../../lib/rate-windows.ts';

export interface RateLimitOptions {
  globalPerMinute: number;
  /** The verified user id of a bearer token, so an authenticated caller is limited as a user, not by address. */
  subjectOf(authorization: string | undefined): Promise<string | undefined>;
}

/** The window each limited request's answer shows, and the reply it shows it on. */
const shown = new WeakMap<FastifyRequest, { reply: FastifyReply; hit: Hit }>();

function showHeaders(reply: FastifyReply, hit: Hit): void {
  reply.header('X-RateLimit-Limit', hit.limit);
  reply.header('X-RateLimit-Remaining', hit.remaining);
  reply.header('X-RateLimit-Reset', hit.reset);
  if (!hit.allowed) reply.header('Retry-After', Math.max(1, hit.reset - Math.floor(Date.now() / 1000)));
}

/**
 * Another window a limited request counted against (a login's, per account: routers/auth/login-guard.ts). The
 * answer shows the one with the fewest requests left, or the first one exceeded.
 */
export function showLimit(request: FastifyRequest, hit: Hit): void {
  const entry = shown.get(request);
  if (!entry || !entry.hit.allowed || (hit.allowed && hit.remaining >= entry.hit.remaining)) return;
  entry.hit = hit;
  showHeaders(entry.reply, hit);
}

/**
 * The path as the router saw it: the pattern of the route that matched (`/api/users/:id`), else the decoded
 * path. Never the URL as sent, where `/%61pi/users` reaches `/api/users` without starting with `/api/`.
 */
function routedPath(request: FastifyRequest): string {
  const route = request.routeOptions.url;
  if (route !== undefined) return route;
  const raw = request.url.split('?', 1)[0]!;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/**
 * Every `/api` and `/trpc` request counts against the caller: the user when authenticated, else the client's
 * network (its IPv4 address or IPv6 /64). Logins count per account as well, where the login runs (the login
 * guard), so every path and every call of a tRPC batch counts.
 */
export function registerRateLimits(app: FastifyInstance, options: RateLimitOptions): void {
  const limiter = new RateLimiter();
  app.addHook('preHandler', async (request, reply) => {
    const path = routedPath(request);
    if (!path.startsWith('/api/') && !path.startsWith('/trpc/')) return;
    const subject = await options.subjectOf(request.headers.authorization);
    const hit = limiter.hit(subject ? `user:${subject}` : `ip:${clientNetwork(request.ip)}`, options.globalPerMinute);
    shown.set(request, { reply, hit });
    showHeaders(reply, hit);
    if (!hit.allowed) throw new TooManyRequestsError('error.too_many_requests');
  });
}
