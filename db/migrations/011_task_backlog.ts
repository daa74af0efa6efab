import type { Migration } from './migration.ts';

/**
 * What a backlog of tasks cost each request and each claim in proportion to its size. The administrator's task
 * count read every row through an index (about 40 µs a page at 110,000 tasks, growing with the table): where the
 * database keeps it cheaply, a one-row counter kept by triggers answers it (db/counts.ts), and the max_retries
 * index, kept only for that count there (migration 009), goes. The claim walked every pending task in (status,
 * run_after, id) order and read each one's row for its type: 10,000 pending tasks of a type no node of this
 * version runs cost 15–20 ms a claim, once a second on an idle node, stalling its requests. With type and
 * deleted_at in the index the walk never leaves it (about a tenth of that). PostgreSQL's pending index is partial
 * (migration 010), and ClickHouse claims in memory; there nothing changes.
 */
export const taskBacklog: Migration = {
  name: '011_task_backlog',
  async up(knex, { t, dialect, createTable }) {
    if (dialect.keepLiveRowCount) {
      await createTable(t.taskCount, (table) => {
        table.integer('id').primary();
        table.bigInteger('live').notNullable();
      });
      await dialect.keepLiveRowCount(knex, t.tasks, t.taskCount);
      await knex.schema.alterTable(t.tasks, (table) => table.dropIndex(['max_retries']));
    }
    if (!dialect.claim || dialect.indexesEveryRowVersion) return;
    await knex.schema.alterTable(t.tasks, (table) => {
      table.index(['status', 'run_after', 'id', 'type', 'deleted_at'], `${t.tasks}_claim_index`);
    });
    await knex.schema.alterTable(t.tasks, (table) => table.dropIndex(['status', 'run_after', 'id']));
  },
};
