import type { Migration } from './migration.ts';

/**
 * The claim's index held every task by status (migration 011): each claim moved a task's entry from the pending
 * part of the index to the running part, each outcome from there to the finished part, where it stayed for good.
 * On SQLite those moves were most of the pages a claim's and an outcome's commit wrote to the WAL, and then
 * copied into the database file at each checkpoint. As on PostgreSQL (migration 010), the claim's index now holds
 * only pending live tasks (with their type, so a claim still walks a backlog of types this node does not run
 * without reading rows) and the reaper's only running ones: a claim deletes one small entry and adds one, an
 * outcome deletes one, and the finished are in neither. The statements write the status into their text
 * (db/tasks/predicates.ts, `whereStatus`): SQLite uses a partial index only when the statement's own text implies
 * the index's WHERE.
 */
export const taskClaimEntries: Migration = {
  name: '012_task_claim_entries',
  async up(knex, { t, dialect }) {
    if (!dialect.claim || !dialect.partialIndexes || dialect.indexesEveryRowVersion) return;
    await knex.schema.alterTable(t.tasks, (table) => {
      // status and deleted_at as well: SQLite reads an index as covering only when it holds every column the
      // statement names, its WHERE's included.
      table.index(['run_after', 'id', 'type', 'status', 'deleted_at'], `${t.tasks}_pending_index`, {
        predicate: knex.whereRaw("status = 'pending'").whereNull('deleted_at'),
      });
      table.index(['lease_expires_at'], `${t.tasks}_running_index`, { predicate: knex.whereRaw("status = 'running'") });
    });
    await knex.schema.alterTable(t.tasks, (table) => table.dropIndex([], `${t.tasks}_claim_index`));
  },
};
