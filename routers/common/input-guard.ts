import { fieldError } from '../../lib/errors.ts';
import { MAX_JSON_DEPTH } from '../../lib/json-limits.ts';

interface Pending {
  value: unknown;
  path: string;
  depth: number;
}

/**
 * Refuses, naming the field, an input nested deeper than MAX_JSON_DEPTH or holding a NUL character in any
 * string: PostgreSQL cannot store a NUL in a text column (a 500 there) while SQLite and MySQL keep it, so
 * every database and transport refuses it alike. The walk keeps its own stack, never the call stack: the
 * input is the client's, and tRPC parses `?input=` and its bodies itself, so nothing has bounded it yet.
 */
export function guardInput(input: unknown): void {
  const pending: Pending[] = [{ value: input, path: '', depth: 0 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value, path, depth } = next;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) throw fieldError(path || 'input', 'validation.no_nul');
      continue;
    }
    if (!value || typeof value !== 'object') continue;
    if (depth === MAX_JSON_DEPTH)
      throw fieldError(path.split('.')[0] || 'input', 'validation.max_depth', { max: MAX_JSON_DEPTH });
    const keys = Object.keys(value);
    // Pushed last to first, so the first offending field in input order is the one named.
    for (let i = keys.length - 1; i >= 0; i--) {
      const k = keys[i]!;
      pending.push({ value: (value as Record<string, unknown>)[k], path: path ? `${path}.${k}` : k, depth: depth + 1 });
    }
  }
}
