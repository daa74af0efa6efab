interface Entry<V> {
  value: V;
  /** When the entry last moved to the back of the eviction order. */
  moved: number;
}

/**
 * A bounded least-recently-used map; `cache.size` sets the bound for every cache built from it. A read moves
 * its entry to the back of the eviction order only when the entry is in the older half of it: moving costs a
 * Map delete and set, and the hottest entries (a caller's token, user and session) are read on every request.
 */
export class LruCache<K, V> {
  private readonly map = new Map<K, Entry<V>>();
  private moves = 0;
  constructor(private readonly capacity: number) {}

  get(key: K): V | undefined {
    const entry = this.map.get(key);
    if (entry === undefined) return undefined;
    if (this.moves - entry.moved >= this.capacity / 2) {
      this.map.delete(key);
      this.map.set(key, entry);
      entry.moved = ++this.moves;
    }
    return entry.value;
  }

  set(key: K, value: V): void {
    if (this.capacity <= 0) return;
    this.map.delete(key);
    this.map.set(key, { value, moved: ++this.moves });
    if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value as K);
  }

  delete(key: K): void {
    this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
  }

  get size(): number {
    return this.map.size;
  }
}
