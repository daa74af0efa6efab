import type { Knex } from 'knex';

/**
 * Case-insensitive substring match of `term` in any of `columns`, with LIKE wildcards in the term taken
 * literally. `!` is the escape character because MySQL reads backslashes inside string literals.
 * `uuidColumns` are matched through their text form (PostgreSQL has no lower() of a uuid).
 */
export function whereContains(
  query: Knex.QueryBuilder,
  columns: string[],
  term: string,
  uuidColumns: string[] = [],
): void {
  const pattern = `%${term.toLowerCase().replace(/[%_!]/g, (c) => `!${c}`)}%`;
  query.where((q) => {
    for (const c of columns) q.orWhereRaw(`lower(??) like ? escape '!'`, [c, pattern]);
    for (const c of uuidColumns) q.orWhereRaw(`lower(cast(?? as char(36))) like ? escape '!'`, [c, pattern]);
  });
}
