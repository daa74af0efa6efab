import type { Migration } from './migration.ts';

/**
 * Lists read newest first by (created_at, id), and with `id` in the index a page is read in index order, the
 * read stopping at the page's end however many rows the table holds; without it SQLite and PostgreSQL sorted
 * the rows of each created_at value again. The task list's index leaves out deleted_at: PostgreSQL does not
 * take `deleted_at IS NULL` as fixing that column, so (deleted_at, created_at) could not give it the order,
 * and it sorted the whole table per page; deleted tasks are few, so skipping them on the way costs little.
 * Soft-deleted tasks get an index of their own, partial where the engine allows it (MySQL indexes every row):
 * counts subtract them (db/counts.ts), and a full index on deleted_at would lead SQLite's planner, which takes
 * IS NULL as selective, to sort every live task per page. SQLite counts a whole table through its narrowest
 * index: an index of max_retries (set once at insert, filtered on by nothing) is a tenth of the primary key's,
 * so counting 110,000 tasks reads 160 pages instead of 1,300 (10 µs against 44). Each index replaces the one
 * it extends, and no status change writes the new ones. ClickHouse reads through its sort key: there these are data-skipping
 * indexes and change nothing.
 */
export const taskListIndexes: Migration = {
  name: '009_task_list_indexes',
  async up(knex, { t }) {
    await knex.schema.alterTable(t.tasks, (table) => {
      table.index(['created_at', 'id']);
      table.index(['creator_id', 'created_at', 'id']);
      table.index(['deleted_at'], undefined, { predicate: knex.whereNotNull('deleted_at') });
      table.index(['max_retries']);
    });
    await knex.schema.alterTable(t.tasks, (table) => {
      table.dropIndex(['deleted_at', 'created_at']);
      table.dropIndex(['creator_id', 'created_at']);
    });
    await knex.schema.alterTable(t.auditLogs, (table) => {
      table.index(['created_at', 'id']);
      table.index(['user_id', 'created_at', 'id']);
    });
    await knex.schema.alterTable(t.auditLogs, (table) => {
      table.dropIndex(['created_at']);
      table.dropIndex(['user_id', 'created_at']);
    });
  },
};
