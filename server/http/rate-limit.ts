import type { FastifyInstance, FastifyRequest } from 'fastify';
import { TooManyRequestsError } from '../../lib/errors.ts';
import { lruCache, type Lru } from '../../lib/lru.ts';
import { clientNetwork } from './client-network.ts';

const WINDOW_MS = 60_000;
/** Keys tracked at once; the least recently seen client is forgotten first. */
const CAPACITY = 100_000;

export interface Hit {
  limit: number;
  remaining: number;
  /** When the window ends, in Unix seconds (README, rate_limit.*: a timestamp, not a delta). */
  reset: number;
  allowed: boolean;
}

/** Fixed one-minute windows per key, in this process (each node limits on its own). */
export class RateLimiter {
  // Made on the first request: lru-cache allocates its 100,000 slots up front (1.5 MB), which an idle node need not hold.
  private windows?: Lru<string, { count: number; resetAt: number }>;

  hit(key: string, limit: number, now = Date.now()): Hit {
    const windows = (this.windows ??= lruCache(CAPACITY));
    let w = windows.get(key);
    if (!w || w.resetAt <= now) windows.set(key, (w = { count: 0, resetAt: now + WINDOW_MS }));
    w.count++;
    return {
      limit,
      remaining: Math.max(0, limit - w.count),
      reset: Math.ceil(w.resetAt / 1000),
      allowed: w.count <= limit,
    };
  }
}

export interface RateLimitOptions {
  loginPerMinute: number;
  globalPerMinute: number;
  /** The verified user id of a bearer token, so an authenticated caller is limited as a user, not by address. */
  subjectOf(authorization: string | undefined): Promise<string | undefined>;
}

const LOGIN_PATHS = new Set(['/api/auth/login', '/trpc/auth.login']);

function loginName(request: FastifyRequest): string {
  const body = request.body as { username?: unknown } | undefined;
  return typeof body?.username === 'string' ? body.username.toLowerCase() : '';
}

/**
 * Every `/api` and `/trpc` request counts against the caller (user when authenticated, else the client's
 * network: its IPv4 address or IPv6 /64); a login also counts against that network + username. The answer
 * shows the tighter of the two windows.
 * Runs as a preHandler, after the body is parsed (the username is in it).
 */
export function registerRateLimits(app: FastifyInstance, options: RateLimitOptions): void {
  const limiter = new RateLimiter();
  app.addHook('preHandler', async (request, reply) => {
    const path = request.url.split('?', 1)[0]!;
    if (!path.startsWith('/api/') && !path.startsWith('/trpc/')) return;
    const subject = await options.subjectOf(request.headers.authorization);
    const network = clientNetwork(request.ip);
    let shown = limiter.hit(subject ? `user:${subject}` : `ip:${network}`, options.globalPerMinute);
    if (request.method === 'POST' && LOGIN_PATHS.has(path)) {
      const login = limiter.hit(`login:${network}:${loginName(request)}`, options.loginPerMinute);
      if (!login.allowed || (shown.allowed && login.remaining < shown.remaining)) shown = login;
    }
    reply.header('X-RateLimit-Limit', shown.limit);
    reply.header('X-RateLimit-Remaining', shown.remaining);
    reply.header('X-RateLimit-Reset', shown.reset);
    if (!shown.allowed) {
      reply.header('Retry-After', Math.max(1, shown.reset - Math.floor(Date.now() / 1000)));
      throw new TooManyRequestsError('error.too_many_requests');
    }
  });
}
