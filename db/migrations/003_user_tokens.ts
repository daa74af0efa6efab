import { TIME, type Migration } from './migration.ts';

/** Single-use, expiring credentials sent by email: password reset links and MFA login codes. */
export const userTokens: Migration = {
  name: '003_user_tokens',
  async up(_knex, { t, createTable }) {
    await createTable(t.userTokens, (table) => {
      table.uuid('id').primary();
      table.uuid('user_id').notNullable().references('id').inTable(t.users).onDelete('CASCADE');
      table.string('purpose', 32).notNullable();
      // SHA-256 of the token handed out: a leaked table gives no usable token.
      table.string('token_hash', 64).notNullable().unique();
      table.string('code_hash', 64).nullable();
      table.integer('attempts').notNullable().defaultTo(0);
      table.datetime('created_at', TIME).notNullable();
      table.datetime('expires_at', TIME).notNullable();
      table.datetime('used_at', TIME).nullable();
      table.index(['expires_at']);
    });
  },
};
