import { lruCache, type Lru } from './lru.ts';

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
