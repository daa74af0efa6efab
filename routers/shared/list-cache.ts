import type { ChangeFeed } from '../../db/change-feed.ts';
import { LruCache } from '../../lib/lru.ts';

/**
 * Pages of a list (rows and total) keyed by their query, dropped whenever one of `channels` changes on any
 * node. Admin UIs poll lists; this serves repeats from memory while a change shows at once on its own node
 * and within the change feed's delay elsewhere, the same guarantee as the identity caches.
 */
export class ListCache<T> {
  private readonly pages: LruCache<string, Promise<T>>;
  private generation = 0;

  constructor(feed: ChangeFeed, channels: string[], size: number) {
    this.pages = new LruCache(size);
    feed.subscribe((channel) => {
      if (channels.includes(channel)) this.clear();
    });
  }

  get(key: string, load: () => Promise<T>): Promise<T> {
    const hit = this.pages.get(key);
    if (hit) return hit;
    const generation = this.generation;
    const pending = load();
    this.pages.set(key, pending);
    // A failed load, or one that raced a change, must not stay cached.
    pending.then(
      () => {
        if (generation !== this.generation) this.pages.delete(key);
      },
      () => this.pages.delete(key),
    );
    return pending;
  }

  clear(): void {
    this.generation++;
    this.pages.clear();
  }
}
