import type { ChangeFeed } from '../../db/change-feed.ts';
import { LruCache } from '../../lib/lru.ts';
import { offsetOf, type Pagination } from './schemas.ts';

/**
 * Values loaded from the database (identities, sessions, list pages), bounded by `cache.size` and dropped
 * whenever one of `channels` changes on any node: a change shows at once on its own node and within the
 * change feed's delay elsewhere. A load that raced a change is not kept, so a stale read cannot outlive
 * the change that made it stale.
 */
export class FeedCache<T> {
  private readonly entries: LruCache<string, Promise<T>>;
  private generation = 0;

  constructor(feed: ChangeFeed, channels: string[], size: number) {
    this.entries = new LruCache(size);
    feed.subscribe((channel) => {
      if (channels.includes(channel)) this.clear();
    });
  }

  get(key: string, load: () => Promise<T>): Promise<T> {
    const hit = this.entries.get(key);
    if (hit) return hit;
    const generation = this.generation;
    const pending = load();
    this.entries.set(key, pending);
    // A failed load, or one that raced a change, must not stay cached.
    pending.then(
      () => {
        if (generation !== this.generation) this.entries.delete(key);
      },
      () => this.entries.delete(key),
    );
    return pending;
  }

  /** Replaces a cached value this node has just written itself. */
  set(key: string, value: T): void {
    this.entries.set(key, Promise.resolve(value));
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }
}

export type PageQuery = Pagination & { search?: string };

type PageLoad<T, F> = (q: { offset: number; limit: number; search?: string } & F) => Promise<{ rows: T[]; total: number }>;

/**
 * Rows and total of one page of a list, loaded once per query until the cache's channels change. `filter`
 * (such as the organization a request acts in) is part of the key and is handed on to `load`.
 */
export function cachedPage<T, F extends Record<string, string | undefined> = Record<never, never>>(cache: FeedCache<{ rows: T[]; total: number }>, p: PageQuery, load: PageLoad<T, F>, filter = {} as F) {
  return cache.get(JSON.stringify([p.current, p.page_size, p.search ?? '', filter]), () => load({ offset: offsetOf(p), limit: p.page_size, search: p.search, ...filter }));
}
