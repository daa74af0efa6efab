import type { Knex } from 'knex';
import { lruCache, type Lru } from '../lib/lru.ts';

/** A read compiled ahead of its runs: its statement and bindings, or a builder where knex runs it (database servers). */
export interface PreparedRead {
  sql(): { sql: string; bindings: readonly unknown[] };
  builder(): Knex.QueryBuilder;
}

/**
 * A read whose statement never changes (no value of a request in it): `Database.read` compiles it once,
 * however often it runs. Compiling a builder costs more than SQLite takes to run a small statement.
 */
export class FixedRead implements PreparedRead {
  private compiled?: Knex.Sql;
  constructor(readonly query: Knex.QueryBuilder) {}

  /** The statement and its bindings, compiled at the first call. */
  sql(): Knex.Sql {
    return (this.compiled ??= this.query.toSQL());
  }

  /** Each run of a builder needs a fresh one (knex runs it once). */
  builder(): Knex.QueryBuilder {
    return this.query.clone();
  }
}

/** The values of a shaped read: each one given is bound as it is; one left undefined leaves its filter out. */
export type ShapeValues = Record<string, unknown>;

/** What stands for a value while a shape is compiled: no value of a request can hold a NUL character. */
const marker = (name: string) => `\u0000shaped:${name}`;

export interface Shape {
  sql: string;
  /** Per binding: the name of the value it takes, or the constant the statement holds there. */
  slots: ({ name: string } | { constant: unknown })[];
}

/**
 * Compiles `build(values)` once with a marker standing for each value named in `bound`, and answers the statement
 * with, per binding, the name of the value it takes or the constant it holds. `build` must bind each of those
 * values as it is: one it transforms or writes into the SQL cannot be told apart, and compiling it throws.
 */
export function compileShape<V extends ShapeValues>(
  build: (values: V) => Knex.QueryBuilder,
  values: V,
  bound: readonly string[],
): Shape {
  const marked: Record<string, unknown> = { ...values };
  const byMarker = new Map<string, string>();
  for (const name of bound) {
    marked[name] = marker(name);
    byMarker.set(marker(name), name);
  }
  const { sql, bindings } = build(marked as V).toSQL();
  const used = new Set<string>();
  const slots = bindings.map((binding) => {
    const name = typeof binding === 'string' ? byMarker.get(binding) : undefined;
    if (name) used.add(name);
    else if (typeof binding === 'string' && binding.includes('\u0000shaped:'))
      throw new Error(`a shaped read transformed a value before binding it: ${binding}`);
    return name ? { name } : { constant: binding };
  });
  const unbound = bound.filter((name) => !used.has(name));
  if (sql.includes('\u0000shaped:') || unbound.length > 0)
    throw new Error(`a shaped read must bind each value it is given (${unbound.join(', ') || 'written into SQL'})`);
  return { sql, slots };
}

/** Statements kept per shaped read (page windows are part of a shape). */
const SHAPES = 200;

/**
 * A read whose statement changes only with which of its values are given and with the values `written` into it
 * (a page's offset and limit, see page-window.ts), never with the others: compiled once per shape, each run
 * binding its own values. Building and compiling a list statement with knex cost about as much as SQLite took
 * to run it. `build` must put each given value into a binding as it is: one it transforms or writes into the
 * SQL cannot be shaped, and compiling it throws.
 */
export class ShapedRead<V extends ShapeValues> {
  private readonly shapes: Lru<string, Shape> = lruCache(SHAPES);

  constructor(
    private readonly build: (values: V) => Knex.QueryBuilder,
    private readonly written: readonly (keyof V & string)[] = [],
  ) {}

  /** The read of `values`. */
  of(values: V): PreparedRead {
    return {
      sql: () => {
        const shape = this.shapeOf(values);
        return {
          sql: shape.sql,
          bindings: shape.slots.map((slot) => ('name' in slot ? values[slot.name] : slot.constant)),
        };
      },
      builder: () => this.build(values),
    };
  }

  private shapeOf(values: V): Shape {
    const names = Object.keys(values).sort();
    const key = JSON.stringify(
      names.map((name) => [name, this.written.includes(name) ? values[name] : values[name] !== undefined]),
    );
    let shape = this.shapes.get(key);
    if (!shape) this.shapes.set(key, (shape = this.compile(values, names)));
    return shape;
  }

  private compile(values: V, names: string[]): Shape {
    const given = names.filter((name) => values[name] !== undefined && !this.written.includes(name));
    return compileShape(this.build, values, given);
  }
}

/** A builder to run: a prepared read's own, or the builder itself. */
export const runnable = (query: Knex.QueryBuilder | PreparedRead): Knex.QueryBuilder =>
  isPrepared(query) ? query.builder() : query;

export const compiled = (query: Knex.QueryBuilder | PreparedRead): { sql: string; bindings: readonly unknown[] } =>
  isPrepared(query) ? query.sql() : query.toSQL();

function isPrepared(query: Knex.QueryBuilder | PreparedRead): query is PreparedRead {
  return typeof (query as Knex.QueryBuilder).toSQL !== 'function';
}
