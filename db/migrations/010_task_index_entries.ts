import type { Migration } from './migration.ts';

/**
 * On PostgreSQL every status change of a task adds an entry to every index of the table (status is indexed,
 * so the update is never HOT), and a task makes three row versions (created, claimed, finished). Indexes
 * there keep only the versions a query looks for: the claim's (run_after, id) only pending live tasks (the
 * claim, and counting the queue), the reaper's lease_expires_at only running ones, the fire key only the
 * tasks that have one (cron fires; inserts skip a taken key through `ON CONFLICT DO NOTHING`), and
 * max_retries, which serves only SQLite's count of the whole table, goes. SQLite and MySQL/MariaDB write
 * only the indexes whose columns changed (and MySQL has no partial indexes), so they keep migration 009's.
 */
export const taskIndexEntries: Migration = {
  name: '010_task_index_entries',
  async up(knex, { t, dialect }) {
    if (!dialect.indexesEveryRowVersion) return;
    await knex.schema.alterTable(t.tasks, (table) => {
      table.dropIndex(['status', 'run_after', 'id']);
      table.dropUnique(['fire_key']);
      table.dropIndex(['max_retries']);
    });
    await knex.schema.alterTable(t.tasks, (table) => {
      table.index(['run_after', 'id'], `${t.tasks}_pending_index`, {
        predicate: knex.whereRaw("status = 'pending'").whereNull('deleted_at'),
      });
      table.index(['lease_expires_at'], `${t.tasks}_running_index`, { predicate: knex.whereRaw("status = 'running'") });
      table.unique(['fire_key'], { predicate: knex.whereNotNull('fire_key') });
    });
  },
};
