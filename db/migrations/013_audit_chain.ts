import { chainExistingRecords } from '../repositories/audit-chain.ts';
import { TIME, type Migration } from './migration.ts';

/**
 * The audit log becomes a hash chain (docs/audit-chain.md): each record gets its seq, the hash it follows and its
 * own hash; the head row every append locks; the signed checkpoints. Records written before are chained here,
 * oldest first, so verification covers them too.
 */
export const auditChain: Migration = {
  name: '013_audit_chain',
  async up(knex, { t, dialect, createTable }) {
    await knex.schema.alterTable(t.auditLogs, (table) => {
      table.bigInteger('seq').notNullable().defaultTo(0);
      table.string('prev_hash', 64).notNullable().defaultTo('');
      table.string('hash', 64).notNullable().defaultTo('');
    });
    // Not unique: the chain itself tells a second record of one seq (verification names it inserted).
    await knex.schema.alterTable(t.auditLogs, (table) => table.index(['seq', 'id']));
    await createTable(t.auditChain, (table) => {
      table.string('name', 16).primary();
      table.bigInteger('seq').notNullable();
      table.string('hash', 64).notNullable();
    });
    await createTable(t.auditCheckpoints, (table) => {
      table.bigInteger('number').primary();
      table.bigInteger('size').notNullable();
      table.string('hash', 64).notNullable();
      table.datetime('created_at', TIME).notNullable();
      table.bigInteger('removed_through').notNullable();
      table.string('removed_hash', 64).notNullable();
      table.string('signature', 128).notNullable();
    });
    await chainExistingRecords(knex, t, dialect);
  },
};
