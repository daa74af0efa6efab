import type { ChangeFeed } from '../../db/change-feed.ts';
import { lruCache, type Lru } from '../../lib/lru.ts';
import { andThen, type MaybePromise } from '../../lib/maybe-async.ts';
import { offsetOf, page, type Pagination } from './schemas.ts';

/**
 * Values loaded from the database (identities, sessions, list pages), bounded by `cache.size` and dropped
 * whenever one of `channels` changes on any node: a change shows at once on its own node and within the
 * change feed's delay elsewhere. A load that raced a change is not kept, so a stale read cannot outlive
 * the change that made it stale.
 */
export class FeedCache<T> {
  private readonly entries: Lru<string, Promise<T>>;
  /** The values of the entries that have loaded, so that a hit needs no promise. */
  private readonly loaded = new WeakMap<Promise<T>, { value: T }>();
  private generation = 0;

  constructor(feed: ChangeFeed, channels: string[], size: number) {
    this.entries = lruCache(size);
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
      (value) => {
        if (generation !== this.generation) this.entries.delete(key);
        else this.loaded.set(pending, { value });
      },
      () => this.entries.delete(key),
    );
    return pending;
  }

  /** The value itself when it has loaded, else the promise of it. */
  getNow(key: string, load: () => Promise<T>): MaybePromise<T> {
    const pending = this.get(key, load);
    const loaded = this.loaded.get(pending);
    return loaded ? loaded.value : pending;
  }

  /**
   * Replaces a cached value this node has just written itself, only while the entry still holds the value the
   * write was based on: a change announced since (a logout clearing the sessions) must not be undone.
   */
  replace(key: string, previous: T, value: T): void {
    const current = this.entries.get(key);
    if (!current || this.loaded.get(current)?.value !== previous) return;
    const settled = Promise.resolve(value);
    this.loaded.set(settled, { value });
    this.entries.set(key, settled);
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }
}

export type PageQuery = Pagination & { search?: string };

type PageLoad<T, F> = (
  q: { offset: number; limit: number; search?: string } & F,
) => Promise<{ rows: T[]; total: number }>;

/**
 * Rows and total of one page of a list, loaded once per query until the cache's channels change. `filter`
 * (such as the organization a request acts in) is part of the key and is handed on to `load`.
 */
export function cachedPage<T, F extends Record<string, string | undefined> = Record<never, never>>(
  cache: FeedCache<{ rows: T[]; total: number }>,
  p: PageQuery,
  load: PageLoad<T, F>,
  filter = {} as F,
) {
  return cache.getNow(JSON.stringify([p.current, p.page_size, p.search ?? '', filter]), () =>
    load({ offset: offsetOf(p), limit: p.page_size, search: p.search, ...filter }),
  );
}

/** A page of a list as answered: `cachedPage`'s rows, each shown with `show`, and where the page stands. */
export function cachedListPage<T, J, F extends Record<string, string | undefined> = Record<never, never>>(
  cache: FeedCache<{ rows: T[]; total: number }>,
  p: PageQuery,
  load: PageLoad<T, F>,
  show: (row: T) => J,
  filter = {} as F,
) {
  return andThen(cachedPage(cache, p, load, filter), ({ rows, total }) => page(rows.map(show), total, p));
}
