import { TASKS_LAYOUT, type Migration } from './migration.ts';

/**
 * A version on every task row. ClickHouse appends each change as a whole row with the next version and reads the
 * newest (its tasks table becomes a ReplacingMergeTree). Engines that update rows in place left it at 0 at first;
 * now each UPDATE grows it (db/tasks/row.ts), so the task lists can keep rows by version.
 */
export const taskVersions: Migration = {
  name: '006_task_versions',
  async up(knex, { t, redesign }) {
    // Checked first: on ClickHouse (no transactions) a run that failed after this step starts again.
    if (!(await knex.schema.hasColumn(t.tasks, 'version'))) {
      await knex.schema.alterTable(t.tasks, (table) => table.bigInteger('version').notNullable().defaultTo(0));
    }
    await redesign(t.tasks, TASKS_LAYOUT);
  },
};
