import { TIME, type Migration } from './migration.ts';

/** The answers of requests sent with an `Idempotency-Key`, per user and key (routers/common/idempotency.ts). */
export const idempotencyKeys: Migration = {
  name: '007_idempotency_keys',
  async up(_knex, { t, createTable }) {
    await createTable(t.idempotencyKeys, (table) => {
      table.uuid('user_id').notNullable();
      // SHA-256 of the key as sent: a fixed length, and compared byte for byte whatever the column collation.
      table.string('key_hash', 64).notNullable();
      table.string('request_hash', 64).notNullable();
      // Who holds the row: every change after the claim names it, so a claim taken over after its lease ran
      // out cannot be finished by the request that let it lapse.
      table.uuid('claim_id').notNullable();
      table.string('state', 16).notNullable();
      table.text('response', 'mediumtext').nullable();
      table.datetime('created_at', TIME).notNullable();
      // The end of a running claim's lease, or of a stored answer's 24 hours.
      table.datetime('expires_at', TIME).notNullable();
      table.primary(['user_id', 'key_hash']);
      table.index(['expires_at']);
    });
  },
};
