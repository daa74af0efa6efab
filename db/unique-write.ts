import type { Database } from './database.ts';

export interface UniqueWrite<T> {
  /** The locks of the unique values written (`users.username:bob`): writes of one value take turns in this process. */
  keys: string | readonly string[];
  /** Throws the error naming the field (E4001) when a value is already taken; runs under the locks. */
  check?: () => Promise<void>;
  /** Writes the values; runs under the locks, after `check`. */
  write: () => Promise<T>;
  /**
   * What a unique index's refusal of `write` becomes, after the locks are let go: a node that checked at the same
   * moment won. By default `check` again, which now names the field (else the refusal itself is thrown).
   */
  taken?: (violation: unknown) => Promise<T>;
}

/**
 * Writes values that must be unique: lock their names, check, write, and turn the unique index's refusal into
 * the field's error. The check under the lock decides within this process; across nodes the unique index
 * decides. ClickHouse has no unique indexes and runs as one process, so there the check alone decides.
 */
export async function writeUnique<T>(db: Database, spec: UniqueWrite<T>): Promise<T> {
  try {
    return await db.withLock(spec.keys, async () => {
      await spec.check?.();
      return spec.write();
    });
  } catch (error) {
    if (!db.dialect.isUniqueViolation(error)) throw error;
    if (spec.taken) return spec.taken(error);
    await spec.check?.();
    throw error;
  }
}
