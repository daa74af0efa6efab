import { fieldError } from '../../lib/errors.ts';

/** The path of the first string holding a NUL character (`''` for the input itself), else undefined. */
function nulField(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined;
  if (!value || typeof value !== 'object') return undefined;
  for (const k of Object.keys(value)) {
    const found = nulField((value as Record<string, unknown>)[k], path ? `${path}.${k}` : k);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Refuses a NUL character in any string of an input, naming its field: PostgreSQL cannot store one in a text
 * column (a 500 there) while SQLite and MySQL keep it, so every database and transport refuses it alike.
 */
export function rejectNul(input: unknown): void {
  const field = nulField(input, '');
  if (field !== undefined) throw fieldError(field || 'input', 'validation.no_nul');
}
