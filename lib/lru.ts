import { LRUCache } from 'lru-cache';

/** The part of lru-cache the caches use. */
export interface Lru<K, V> {
  get(key: K): V | undefined;
  set(key: K, value: V): unknown;
  delete(key: K): unknown;
  clear(): void;
}

const NOTHING: Lru<never, never> = {
  get: () => undefined,
  set: () => undefined,
  delete: () => false,
  clear: () => undefined,
};

/**
 * A least-recently-used map of at most `max` entries (lru-cache), or, given `weigh`, of entries weighing at most
 * `max` together (each at least 1): a bound on what its values hold rather than on their number. `cache.size: 0`
 * turns caching off, a bound lru-cache does not take, so 0 gives a map that keeps nothing.
 */
export function lruCache<K extends {}, V extends {}>(max: number, weigh?: (value: V) => number): Lru<K, V> {
  if (max <= 0) return NOTHING as Lru<K, V>;
  return weigh
    ? new LRUCache<K, V>({ maxSize: max, sizeCalculation: (value) => Math.max(1, weigh(value)) })
    : new LRUCache<K, V>({ max });
}
