import { TIME, type Migration } from './migration.ts';

/** Organizations, their members with org-scoped roles, and roles that belong to one organization. */
export const organizations: Migration = {
  name: '004_organizations',
  async up(knex, { t, createTable }) {
    await createTable(t.organizations, (table) => {
      table.uuid('id').primary();
      table.string('name', 128).notNullable();
      // Unique among live organizations: the lower-cased name while it exists, NULL once soft-deleted.
      table.string('name_key', 128).nullable().unique();
      table.string('description', 1024).notNullable().defaultTo('');
      table.string('status', 16).notNullable();
      table.datetime('created_at', TIME).notNullable();
      table.datetime('updated_at', TIME).notNullable();
      table.datetime('deleted_at', TIME).nullable();
      table.index(['deleted_at', 'created_at']);
    });
    await createTable(t.orgMembers, (table) => {
      table.uuid('org_id').notNullable().references('id').inTable(t.organizations).onDelete('CASCADE');
      table.uuid('user_id').notNullable().references('id').inTable(t.users).onDelete('CASCADE');
      table.datetime('created_at', TIME).notNullable();
      table.primary(['org_id', 'user_id']);
      table.index(['user_id']);
    });
    await createTable(t.orgMemberRoles, (table) => {
      table.uuid('org_id').notNullable();
      table.uuid('user_id').notNullable();
      table.uuid('role_id').notNullable().references('id').inTable(t.roles).onDelete('CASCADE');
      table.primary(['org_id', 'user_id', 'role_id']);
      table.foreign(['org_id', 'user_id']).references(['org_id', 'user_id']).inTable(t.orgMembers).onDelete('CASCADE');
      table.index(['role_id']);
    });

    // A role is global (org_id NULL) or belongs to one organization; names are unique within that scope, so
    // the unique index moves from the name to a scoped, lower-cased key (the form roleNameKey writes; every
    // role existing now is global).
    await knex.schema.alterTable(t.roles, (table) => {
      table.uuid('org_id').nullable();
      table.string('name_key', 200).nullable();
      table.dropUnique(['name']);
      table.index(['org_id']);
    });
    const roles = (await knex(t.roles).select('id', 'name')) as { id: string; name: string }[];
    for (const role of roles)
      await knex(t.roles)
        .where('id', role.id)
        .update({ name_key: `global/${role.name.toLowerCase()}` });
    await knex.schema.alterTable(t.roles, (table) => table.unique(['name_key']));
  },
};
