import type { Knex } from 'knex';
import { TIME, type Migration } from './migration.ts';

const timestamps = (t: Knex.CreateTableBuilder) => {
  t.datetime('created_at', TIME).notNullable();
  t.datetime('updated_at', TIME).notNullable();
};

export const identity: Migration = {
  name: '001_identity',
  async up(_knex, { t, createTable }) {
    await createTable(t.users, (table) => {
      table.uuid('id').primary();
      table.string('username', 64).notNullable();
      table.string('email', 255).notNullable();
      // Uniqueness among live users only: the *_key columns hold the lower-cased value while the user
      // exists and NULL once soft-deleted, and every engine allows many NULLs in a unique index.
      table.string('username_key', 64).nullable().unique();
      table.string('email_key', 255).nullable().unique();
      table.string('password_hash', 255).notNullable();
      table.string('full_name', 255).notNullable().defaultTo('');
      table.string('avatar', 1024).notNullable().defaultTo('');
      table.string('status', 16).notNullable();
      table.boolean('mfa_enabled').notNullable().defaultTo(false);
      table.string('locale', 16).notNullable().defaultTo('en');
      table.integer('failed_attempts').notNullable().defaultTo(0);
      table.datetime('locked_until', TIME).nullable();
      table.datetime('last_login_at', TIME).nullable();
      table.datetime('password_changed_at', TIME).nullable();
      timestamps(table);
      table.datetime('deleted_at', TIME).nullable();
      table.index(['deleted_at', 'created_at']);
    });
    await createTable(t.roles, (table) => {
      table.uuid('id').primary();
      table.string('name', 64).notNullable().unique();
      table.string('description', 1024).notNullable().defaultTo('');
      table.boolean('is_system').notNullable().defaultTo(false);
      timestamps(table);
    });
    await createTable(t.rolePermissions, (table) => {
      table.uuid('role_id').notNullable().references('id').inTable(t.roles).onDelete('CASCADE');
      table.string('permission', 128).notNullable();
      table.primary(['role_id', 'permission']);
    });
    await createTable(t.userRoles, (table) => {
      table.uuid('user_id').notNullable().references('id').inTable(t.users).onDelete('CASCADE');
      table.uuid('role_id').notNullable().references('id').inTable(t.roles).onDelete('CASCADE');
      table.primary(['user_id', 'role_id']);
      table.index(['role_id']);
    });
    await createTable(t.sessions, (table) => {
      table.uuid('id').primary();
      table.uuid('user_id').notNullable().references('id').inTable(t.users).onDelete('CASCADE');
      table.string('ip', 64).notNullable().defaultTo('');
      table.string('user_agent', 512).notNullable().defaultTo('');
      table.datetime('created_at', TIME).notNullable();
      table.datetime('last_seen_at', TIME).notNullable();
      table.datetime('expires_at', TIME).notNullable();
      table.datetime('revoked_at', TIME).nullable();
      table.index(['user_id']);
      table.index(['expires_at']);
    });
    await createTable(t.settings, (table) => {
      table.string('key', 128).primary();
      table.text('value').notNullable();
      table.datetime('updated_at', TIME).notNullable();
    });
    await createTable(t.secrets, (table) => {
      table.string('name', 64).primary();
      table.text('value').notNullable();
      table.datetime('created_at', TIME).notNullable();
    });
    await createTable(t.auditLogs, (table) => {
      table.uuid('id').primary();
      table.datetime('created_at', TIME).notNullable();
      table.uuid('user_id').nullable();
      table.string('username', 64).notNullable().defaultTo('');
      table.string('action', 32).notNullable();
      table.string('resource_type', 32).notNullable();
      table.string('resource_id', 128).notNullable().defaultTo('');
      table.string('status', 16).notNullable();
      table.string('ip', 64).notNullable().defaultTo('');
      table.string('user_agent', 512).notNullable().defaultTo('');
      table.uuid('org_id').nullable();
      table.text('details').notNullable();
      table.index(['created_at']);
      table.index(['user_id', 'created_at']);
      table.index(['resource_type', 'action']);
    });
    await createTable(t.changes, (table) => {
      table.string('channel', 64).primary();
      table.bigInteger('version').notNullable();
    });
  },
};
