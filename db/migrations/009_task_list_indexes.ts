import type { Migration } from './migration.ts';

/**
 * Lists read newest first by (created_at, id). With `id` in the index the page is read in index order and the
 * read stops at the page's end, however many rows the table holds; without it SQLite and PostgreSQL sort every
 * row of a created_at value again (a temporary B-tree per page). Each index replaces the one it extends, so a
 * task's status change maintains no more indexes than before. MySQL would find `id` on its own (InnoDB appends
 * the primary key), and ClickHouse reads through its sort key and FINAL: there these are data-skipping indexes.
 */
export const taskListIndexes: Migration = {
  name: '009_task_list_indexes',
  async up(knex, { t }) {
    await knex.schema.alterTable(t.tasks, (table) => {
      table.index(['deleted_at', 'created_at', 'id']);
      table.index(['creator_id', 'created_at', 'id']);
      // The narrowest index of the table: SQLite counts all rows through it (db/counts.ts), reading a tenth of
      // the pages the primary key's would; no status change touches it.
      table.index(['deleted_at']);
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
