import type { Knex } from 'knex';

/**
 * Case-insensitive substring match of `term` in any of `columns`, with LIKE wildcards in the term taken
 * literally. `!` is the escape character because MySQL reads backslashes inside string literals.
 */
export function whereContains(query: Knex.QueryBuilder, columns: string[], term: string): void {
  const pattern = `%${term.toLowerCase().replace(/[%_!]/g, (c) => `!${c}`)}%`;
  query.where((q) => {
    for (const c of columns) q.orWhereRaw(`lower(??) like ? escape '!'`, [c, pattern]);
  });
}
