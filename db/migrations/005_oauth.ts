import { TIME, type Migration } from './migration.ts';

/** Accounts of external OAuth providers linked to users, and the pending logins' single-use states. */
export const oauth: Migration = {
  name: '005_oauth',
  async up(_knex, { t, createTable }) {
    await createTable(t.oauthIdentities, (table) => {
      table.string('provider', 64).notNullable();
      // The provider's stable id of the account (`sub`, or `id`), never the email, which can change hands.
      table.string('subject', 255).notNullable();
      table.uuid('user_id').notNullable().references('id').inTable(t.users).onDelete('CASCADE');
      table.string('email', 255).notNullable().defaultTo('');
      table.datetime('created_at', TIME).notNullable();
      table.primary(['provider', 'subject']);
      table.index(['user_id']);
    });
    await createTable(t.oauthStates, (table) => {
      // The id inside the signed `state`; deleting the row is what uses the state up, on whichever node.
      table.string('id', 64).primary();
      table.string('provider', 64).notNullable();
      table.string('code_verifier', 128).notNullable();
      table.datetime('created_at', TIME).notNullable();
      table.datetime('expires_at', TIME).notNullable();
      table.index(['expires_at']);
    });
  },
};
