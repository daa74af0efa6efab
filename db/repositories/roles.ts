import type { Database } from '../database.ts';
import type { RoleModel } from '../models.ts';
import { whereContains } from '../where-contains.ts';

export type RoleWithPermissions = RoleModel & { permissions: { permission: string }[] };

export interface RoleInput {
  name: string;
  description: string;
  permissions: string[];
}

export async function listRoles(db: Database, opts: { offset: number; limit: number; search?: string }): Promise<{ rows: RoleWithPermissions[]; total: number }> {
  const query = db.models.Role.query();
  if (opts.search) query.onBuildKnex((knexQuery) => whereContains(knexQuery, ['name'], opts.search!));
  const total = await query.clone().resultSize();
  const rows = (await query
    .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }])
    .offset(opts.offset)
    .limit(opts.limit)
    .withGraphFetched('permissions')) as RoleWithPermissions[];
  return { rows, total };
}

export async function findRoleById(db: Database, id: string): Promise<RoleWithPermissions | undefined> {
  return (await db.models.Role.query().findById(id).withGraphFetched('permissions')) as RoleWithPermissions | undefined;
}

export async function findRoleByName(db: Database, name: string): Promise<RoleWithPermissions | undefined> {
  return (await db.models.Role.query().findOne('name', name).withGraphFetched('permissions')) as RoleWithPermissions | undefined;
}

/**
 * Whether another role has this name, ignoring case on every engine (MySQL's collation already does), so
 * "Admin" cannot sit beside "admin".
 */
export async function roleNameTaken(db: Database, name: string, exceptId?: string): Promise<boolean> {
  const q = db.knex(db.t.roles).whereRaw('lower(??) = ?', ['name', name.toLowerCase()]);
  if (exceptId) q.whereNot('id', exceptId);
  return Boolean(await q.first('id'));
}

export async function findRolesByIds(db: Database, ids: string[]): Promise<RoleWithPermissions[]> {
  if (!ids.length) return [];
  return (await db.models.Role.query().findByIds(ids).withGraphFetched('permissions')) as RoleWithPermissions[];
}

export async function insertRole(db: Database, id: string, input: RoleInput, isSystem = false): Promise<void> {
  const now = new Date().toISOString();
  await db.knex.transaction(async (trx) => {
    await db.models.Role.query(trx).insert({ id, name: input.name, description: input.description, is_system: isSystem, created_at: now, updated_at: now });
    if (input.permissions.length) await trx(db.t.rolePermissions).insert(input.permissions.map((permission) => ({ role_id: id, permission })));
  });
}

export async function updateRole(db: Database, id: string, patch: Partial<RoleInput>): Promise<void> {
  await db.knex.transaction(async (trx) => {
    const row: Record<string, unknown> = { updated_at: new Date().toISOString() };
    if (patch.name !== undefined) row.name = patch.name;
    if (patch.description !== undefined) row.description = patch.description;
    await db.models.Role.query(trx).findById(id).patch(row);
    if (patch.permissions) {
      await trx(db.t.rolePermissions).where('role_id', id).del();
      if (patch.permissions.length) await trx(db.t.rolePermissions).insert(patch.permissions.map((permission) => ({ role_id: id, permission })));
    }
  });
}

export async function deleteRole(db: Database, id: string): Promise<void> {
  await db.models.Role.query().deleteById(id);
}

/** Whether a live user holds the role. */
export async function roleInUse(db: Database, id: string): Promise<boolean> {
  const { knex, t } = db;
  const row = await knex(t.userRoles).join(t.users, `${t.users}.id`, `${t.userRoles}.user_id`).where(`${t.userRoles}.role_id`, id).whereNull(`${t.users}.deleted_at`).first(`${t.userRoles}.user_id`);
  return Boolean(row);
}
