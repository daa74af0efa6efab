import type { Knex } from 'knex';

export const isRaw = (value: unknown): value is Knex.Raw =>
  typeof value === 'object' && value !== null && typeof (value as Knex.Raw).toSQL === 'function';

/**
 * The columns every row names, in the same order, when the rows have one shape: raw values (the database clock)
 * in the same columns and the same object in each row, so a statement can write them once for all rows. Undefined
 * for rows of different shapes.
 */
export function sharedColumns(rows: Record<string, unknown>[]): string[] | undefined {
  const [first] = rows;
  if (!first) return undefined;
  const columns = Object.keys(first);
  const same = rows.every((row) => {
    const keys = Object.keys(row);
    return (
      keys.length === columns.length &&
      columns.every((c, i) => keys[i] === c && (isRaw(first[c]) || isRaw(row[c]) ? row[c] === first[c] : true))
    );
  });
  return same ? columns : undefined;
}

/** Rows per INSERT through knex: every engine's limit on bound values holds a statement of them. */
const ROWS_PER_INSERT = 500;

/** Inserts rows through knex, `ROWS_PER_INSERT` to a statement (rows of any shape, on any engine). */
export async function insertByKnex(knex: Knex, table: string, rows: Record<string, unknown>[]): Promise<void> {
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) await knex(table).insert(rows.slice(i, i + ROWS_PER_INSERT));
}
