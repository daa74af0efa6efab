import { appCodeOf, messageOf } from './api.ts';

/** A failed call's message, placed: at the form field it names, or above the form. */
export interface PlacedError {
  /** The message when no field of the form owns it (any error but an E4001 naming one of `fields`). */
  general: string | undefined;
  at: (field: string) => string | undefined;
}

/** E4001 names the field it is about (`name: must ...`), so a form shows it at that field. */
export function placeError(error: unknown, fields: readonly string[]): PlacedError {
  const message = error ? messageOf(error) : undefined;
  const named = message && appCodeOf(error) === 'E4001' ? /^([\w.]+):/.exec(message)?.[1] : undefined;
  const field = named && fields.includes(named) ? named : undefined;
  return { general: field ? undefined : message, at: (f) => (f === field ? message : undefined) };
}
