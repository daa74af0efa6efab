import { deepFreeze } from '../lib/deep-freeze.ts';
import { lruCache, type Lru } from '../lib/lru.ts';
import type { MaybePromise } from '../lib/maybe-async.ts';
import type { Database } from './database.ts';

interface Kept<T> {
  /** `db.dataVersion()` as it was before the read began. */
  version: number;
  value: T;
  /** When the answer would change with no write at all (a window of time moving on), in epoch ms. */
  until: number;
}

/**
 * Answers of reads kept, deep-frozen, while the database has not changed. `db.dataVersion()` changes with every
 * commit of any connection or process, so a kept answer is given again only while nothing at all has been
 * written since the read began, whichever node wrote it: it is never older than the database. Where the
 * database keeps no such number (a database server), every read runs. An answer given again is deep-frozen
 * first, so it is validated and serialised once however often it is given (server/http/frozen-answers.ts).
 * It is frozen then rather than when read: on a database written all the time most answers are never given
 * again, and freezing them showed as a tenth of such a read's profile.
 */
export class ReadCache<T extends object> {
  private readonly kept: Lru<string, Kept<T>>;
  /** The version the kept answers were last checked against. */
  private seen?: number;

  constructor(
    private readonly db: Database,
    size: number,
  ) {
    this.kept = lruCache(size);
  }

  /**
   * The answer of `load` for `key`, read again once the database has changed or `until(answer)` (epoch ms) has
   * passed. A `fresh` read is neither answered from nor kept. Answered without a promise when kept.
   */
  get(key: string, load: () => Promise<T>, until?: (value: T) => number, fresh = false): MaybePromise<T> {
    if (fresh) return load();
    const version = this.db.dataVersion();
    if (version === undefined) return load();
    // Every kept answer is stale once the database has changed: let them all go rather than hold them.
    if (version !== this.seen) {
      this.kept.clear();
      this.seen = version;
    }
    const hit = this.kept.get(key);
    // Frozen when first given again, not when read (deepFreeze does nothing to a value it froze before).
    if (hit && hit.version === version && Date.now() < hit.until) return deepFreeze(hit.value);
    return load().then((value) => {
      this.kept.set(key, { version, value, until: until ? until(value) : Infinity });
      return value;
    });
  }
}
