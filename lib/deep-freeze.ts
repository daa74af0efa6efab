const frozen = new WeakSet<object>();

/**
 * Freezes a plain value and everything in it, and marks it so. A value so marked is one the caller may keep
 * and hand out again: the REST runner then validates it and serialises it once (see server/http/run-procedure.ts
 * and the adapter). A value frozen only at its top (`Object.freeze`) is not marked: its contents may change.
 */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !frozen.has(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
    frozen.add(value);
  }
  return value;
}

export function isDeepFrozen(value: unknown): value is object {
  return typeof value === 'object' && value !== null && frozen.has(value);
}

/**
 * What `derive` makes of a value (its serialised body), kept while a deep-frozen value lives, since such a value
 * cannot change; any other value is derived anew each time. One per kind of derivation (per route).
 */
export function derivedOncePerFrozen<R>(): (value: unknown, derive: () => R) => R {
  const kept = new WeakMap<object, R>();
  return (value, derive) => {
    if (!isDeepFrozen(value)) return derive();
    let result = kept.get(value);
    if (result === undefined) kept.set(value, (result = derive()));
    return result;
  };
}
