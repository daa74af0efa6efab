/**
 * Values that are at hand or still coming. Hot read paths answer from caches without a promise when they can:
 * while AsyncLocalStorage is active (trace ids in logs) every promise costs an async hook, and each await a
 * microtask; a cached list request made dozens of them.
 */
export type MaybePromise<T> = T | Promise<T>;

export function isPromise<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/**
 * `fn(value)` now when the value is at hand, else once it has come. Not named `then`: a module exporting `then`
 * is a thenable, and `await import()` of it would call that instead of giving the module.
 */
export function andThen<T, R>(value: MaybePromise<T>, fn: (value: T) => MaybePromise<R>): MaybePromise<R> {
  return isPromise(value) ? value.then(fn) : fn(value);
}

/** Every element settled; a promise only when one of them is. */
export function all<T>(values: MaybePromise<T>[]): MaybePromise<T[]> {
  return values.some(isPromise) ? Promise.all(values) : (values as T[]);
}
