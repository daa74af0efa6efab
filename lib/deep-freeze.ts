const frozen = new WeakSet<object>();

/**
 * Freezes a plain value and everything in it, and marks it so. A value so marked is one the caller may keep
 * and hand out again: the transports then validate it and serialise it once (server/http/frozen-answers.ts).
 * A value frozen only at its top (`Object.freeze`) is not marked: its contents may change.
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
