import { TIME, type Migration } from './migration.ts';

/**
 * The live task events (README "Live task events"): a short log of task changes numbered by the database, so
 * an event id handed out by one node resumes on any other; and the single-use tickets a browser's EventSource
 * opens the stream with.
 */
export const taskEvents: Migration = {
  name: '008_task_events',
  async up(_knex, { t, createTable }) {
    await createTable(t.taskEvents, (table) => {
      // The primary key is the order events are read in (`where id > last`).
      table.bigIncrements('id');
      table.uuid('task_id').notNullable();
      // The task's creator and organization, which decide who may see the event.
      table.uuid('user_id').nullable();
      table.uuid('org_id').nullable();
      table.string('status', 16).notNullable();
      table.integer('progress').notNullable();
      // The task as the API answers it, at the time of the event.
      table.text('task', 'mediumtext').notNullable();
      table.datetime('created_at', TIME).notNullable();
      table.index(['created_at']);
    });
    await createTable(t.eventTickets, (table) => {
      // SHA-256 of the ticket handed out: a leaked table opens no stream.
      table.string('ticket_hash', 64).primary();
      table.uuid('user_id').notNullable();
      // The session the ticket was asked with: the stream ends with it.
      table.uuid('session_id').notNullable();
      table.datetime('created_at', TIME).notNullable();
      table.datetime('expires_at', TIME).notNullable();
      table.datetime('used_at', TIME).nullable();
      table.index(['expires_at']);
    });
  },
};
