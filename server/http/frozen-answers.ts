import { deepFreeze, isDeepFrozen } from '../../lib/deep-freeze.ts';
import { andThen, type MaybePromise } from '../../lib/maybe-async.ts';

// The rule of frozen answers. A service deep-freezes (lib/deep-freeze.ts) an answer it keeps and hands out again,
// a cached page or the caller's own record: such a value cannot change while it lives. So the work a transport
// does on an answer is done once per frozen answer instead of once per request: its output validation, whose
// result is frozen in turn, and each route's serialised body of it. Any other answer is worked on each time.

/** The procedure's output validation, run once per frozen answer. */
export function validatedOncePerFrozen(
  validate: (data: unknown) => MaybePromise<unknown>,
): (data: unknown) => MaybePromise<unknown> {
  const kept = new WeakMap<object, unknown>();
  return (data) => {
    if (!isDeepFrozen(data)) return validate(data);
    const validated = kept.get(data);
    if (validated !== undefined) return validated;
    // Kept once it has passed: a failure is thrown again by the next request.
    return andThen(validate(data), (parsed) => {
      kept.set(data, deepFreeze(parsed));
      return parsed;
    });
  };
}

/** A route's body of an answer: `serialise()` runs once per frozen answer. */
export function serialisedOncePerFrozen(): (data: unknown, serialise: () => string) => string {
  const kept = new WeakMap<object, string>();
  return (data, serialise) => {
    if (!isDeepFrozen(data)) return serialise();
    let body = kept.get(data);
    if (body === undefined) kept.set(data, (body = serialise()));
    return body;
  };
}
