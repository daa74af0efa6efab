import { TIME, type Migration } from './migration.ts';

export const tasks: Migration = {
  name: '002_tasks',
  async up(_knex, { t, createTable }) {
    await createTable(t.tasks, (table) => {
      table.uuid('id').primary();
      table.string('type', 64).notNullable();
      table.string('status', 16).notNullable();
      table.string('category', 16).notNullable();
      table.text('payload', 'mediumtext').notNullable();
      table.integer('progress').notNullable().defaultTo(0);
      table.text('result', 'mediumtext').nullable();
      table.text('error').nullable();
      table.integer('retry_count').notNullable().defaultTo(0);
      table.integer('max_retries').notNullable().defaultTo(0);
      table.uuid('creator_id').nullable();
      table.string('cron_schedule_id', 64).nullable();
      // One task per cron fire across nodes: every node tries the insert, the unique key lets one win.
      table.string('fire_key', 128).nullable().unique();
      table.string('artifact_file_key', 64).nullable();
      table.string('artifact_file_name', 255).nullable();
      table.uuid('org_id').nullable();
      // Where this task's logs went (the setting may change later; reads must still find them).
      table.string('log_backend', 32).nullable();
      // Claim bookkeeping: which node runs it, which claim (fences late writes of a node that lost the lease).
      table.string('worker_id', 128).nullable();
      table.string('claim_id', 36).nullable();
      table.datetime('lease_expires_at', TIME).nullable();
      table.boolean('cancel_requested').notNullable().defaultTo(false);
      // Not claimable before this (database clock): creation time, or the end of a retry backoff.
      table.datetime('run_after', TIME).notNullable();
      table.datetime('created_at', TIME).notNullable();
      table.datetime('updated_at', TIME).notNullable();
      table.datetime('started_at', TIME).nullable();
      table.datetime('finished_at', TIME).nullable();
      table.datetime('deleted_at', TIME).nullable();
      // Every index costs on each of a task's status changes, so only what a frequent query needs: claims
      // (pending, oldest first) and the reaper (running) share the first; lists use the next two. The daily
      // retention cleanup scans.
      table.index(['status', 'run_after', 'id']);
      table.index(['deleted_at', 'created_at']);
      table.index(['creator_id', 'created_at']);
    });
    await createTable(t.taskLogs, (table) => {
      // Time-ordered (UUIDv7) ids: entries of one task sort by (created_at, id) in the order written.
      table.uuid('id').primary();
      table.uuid('task_id').notNullable();
      table.string('level', 8).notNullable();
      table.text('message').notNullable();
      table.datetime('created_at', TIME).notNullable();
      table.index(['task_id', 'created_at']);
      table.index(['created_at']);
    });
    await createTable(t.files, (table) => {
      table.string('key', 64).primary();
      table.uuid('task_id').nullable();
      table.uuid('owner_id').nullable();
      table.string('name', 255).notNullable();
      table.string('content_type', 255).notNullable();
      table.bigInteger('size').notNullable();
      // Relative to server.file_upload_path, so the folder can move (or be mounted elsewhere on another node).
      table.string('path', 1024).notNullable();
      table.datetime('created_at', TIME).notNullable();
      table.index(['task_id']);
      table.index(['created_at']);
    });
    await createTable(t.taskSchedules, (table) => {
      // Definitions live in code; only what changes at run time is stored.
      table.string('id', 64).primary();
      table.boolean('enabled').notNullable();
      table.datetime('last_run', TIME).nullable();
      table.datetime('next_run', TIME).nullable();
      table.datetime('updated_at', TIME).notNullable();
    });
  },
};
