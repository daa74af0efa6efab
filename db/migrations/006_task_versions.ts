import { TASKS_LAYOUT, type Migration } from './migration.ts';

/**
 * A version on every task row. Engines that update rows in place leave it at 0; ClickHouse appends each change
 * as a whole row with the next version and reads the newest (its tasks table becomes a ReplacingMergeTree).
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
