/**
 * Freezes a plain value and everything in it. A frozen answer is one the caller may keep and hand out again:
 * the REST runner then validates it and serialises it once (see server/http/run-procedure.ts and the adapter).
 */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
