/**
 * In-process mutual exclusion by key: callers holding the same key run one after another, in arrival order;
 * different keys run freely. Several keys are taken in sorted order, so two callers asking for overlapping
 * sets cannot wait on each other forever. Not re-entrant: a holder asking again for one of its keys waits
 * for itself.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(keys: string | readonly string[], fn: () => Promise<T>): Promise<T> {
    const sorted = [...new Set(typeof keys === 'string' ? [keys] : keys)].sort();
    const releases: (() => void)[] = [];
    try {
      for (const key of sorted) releases.push(await this.acquire(key));
      return await fn();
    } finally {
      for (const release of releases.reverse()) release();
    }
  }

  /** Waits for the key's current holders, then holds it until the returned function is called. */
  private async acquire(key: string): Promise<() => void> {
    const before = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const tail = before.then(() => held);
    this.tails.set(key, tail);
    await before;
    return () => {
      release();
      // The last holder leaves no entry behind, so the map holds only keys in use.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
  }
}
