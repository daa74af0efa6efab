import { makeEscape } from 'knex/lib/util/string.js';

// ClickHouse string literals take C-style backslash escapes; a quote is escaped with a backslash too.
const ESCAPES: Record<string, string> = {
  '\\': '\\\\',
  "'": "\\'",
  '\0': '\\0',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};

/** A ClickHouse string literal holding `value` exactly. */
export function quoteString(value: string): string {
  return `'${value.replace(/[\\'\0\b\f\n\r\t]/g, (c) => ESCAPES[c]!)}'`;
}

/** A backtick-quoted identifier (backslash escapes, like string literals). */
export function quoteIdentifier(name: string): string {
  return name === '*' ? '*' : `\`${name.replace(/[\\`]/g, (c) => `\\${c}`)}\``;
}

/**
 * A time as ClickHouse parses it into DateTime64(3, 'UTC') columns and compares with them: UTC wall time to the
 * millisecond, no zone suffix (the column's zone applies).
 */
export function quoteTime(date: Date): string {
  return quoteString(date.toISOString().replace('T', ' ').replace('Z', ''));
}

/**
 * Every value is written into the statement text on this side (knex does not know the column types that
 * ClickHouse's server-side `{name:Type}` parameters would need), the way the mysql driver does it.
 */
export const escapeBinding = makeEscape({
  escapeString: (value) => quoteString(String(value)),
  escapeBuffer: (buffer) => `unhex('${buffer.toString('hex')}')`,
  // Objects are JSON columns stored as text.
  escapeObject: (value) => quoteString(JSON.stringify(value)),
  wrap: (escape) => {
    const final = (value: unknown, ctx: object = {}): string =>
      value instanceof Date ? quoteTime(value) : escape(value, final, ctx);
    return final;
  },
});
