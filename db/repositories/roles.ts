import type { Database } from '../database.ts';
import type { RoleModel } from '../models.ts';
import { whereContains } from '../where-contains.ts';

export type RoleWithPermissions = RoleModel & { permissions: { permission: string }[] };

export interface RoleInput {
  name: string;
  description: string;
  permissions: string[];
  /** The organization a new role belongs to; null or absent for a global role. Fixed once created. */
  org_id?: string | null;
}

export interface RoleFilter {
  offset: number;
  limit: number;
  search?: string;
  /** Only the roles of this organization. */
  org_id?: string;
  /** Only the roles usable in this organization: the global ones and its own. */
  usableIn?: string;
}

/** Role names are unique within their scope (the installation, or one organization), ignoring case. */
export function roleNameKey(name: string, orgId: string | null | undefined): string {
  return `${orgId ?? 'global'}/${name.toLowerCase()}`;
}

export async function listRoles(
  db: Database,
  opts: RoleFilter,
): Promise<{ rows: RoleWithPermissions[]; total: number }> {
  const query = db.models.Role.query();
  if (opts.search) query.onBuildKnex((knexQuery) => whereContains(knexQuery, ['name'], opts.search!));
  if (opts.org_id) query.where('org_id', opts.org_id);
  if (opts.usableIn) query.where((w) => w.whereNull('org_id').orWhere('org_id', opts.usableIn!));
  const total = await query.clone().resultSize();
  const rows = (await query
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .offset(opts.offset)
    .limit(opts.limit)
    .withGraphFetched('permissions')) as RoleWithPermissions[];
  return { rows, total };
}

export async function findRoleById(db: Database, id: string): Promise<RoleWithPermissions | undefined> {
  return (await db.models.Role.query().findById(id).withGraphFetched('permissions')) as RoleWithPermissions | undefined;
}

/** A global role by name (organizations may have roles of the same name). */
export async function findRoleByName(db: Database, name: string): Promise<RoleWithPermissions | undefined> {
  return (await db.models.Role.query()
    .findOne({ name_key: roleNameKey(name, null) })
    .withGraphFetched('permissions')) as RoleWithPermissions | undefined;
}

/** Whether another role of the same scope has this name, ignoring case, so "Admin" cannot sit beside "admin". */
export async function roleNameTaken(
  db: Database,
  name: string,
  orgId: string | null,
  exceptId?: string,
): Promise<boolean> {
  const q = db.knex(db.t.roles).where('name_key', roleNameKey(name, orgId));
  if (exceptId) q.whereNot('id', exceptId);
  return Boolean(await q.first('id'));
}

export async function findRolesByIds(db: Database, ids: string[]): Promise<RoleWithPermissions[]> {
  if (!ids.length) return [];
  return (await db.models.Role.query().findByIds(ids).withGraphFetched('permissions')) as RoleWithPermissions[];
}

/** The lock a check-then-write of a role name holds (`db.withLock`), so two requests cannot both take it. */
export function roleLockKey(name: string, orgId: string | null | undefined): string {
  return `roles.name:${roleNameKey(name, orgId)}`;
}

export async function insertRole(db: Database, id: string, input: RoleInput, isSystem = false): Promise<void> {
  const now = new Date().toISOString();
  await db.dialect.transaction(db.knex, async (trx) => {
    const orgId = input.org_id ?? null;
    await db.dialect.insertFamily(
      () =>
        db.models.Role.query(trx).insert({
          id,
          name: input.name,
          name_key: roleNameKey(input.name, orgId),
          org_id: orgId,
          description: input.description,
          is_system: isSystem,
          created_at: now,
          updated_at: now,
        }),
      async () => {
        if (input.permissions.length)
          await trx(db.t.rolePermissions).insert(input.permissions.map((permission) => ({ role_id: id, permission })));
      },
    );
  });
}

export async function updateRole(db: Database, id: string, patch: Partial<Omit<RoleInput, 'org_id'>>): Promise<void> {
  await db.dialect.transaction(db.knex, async (trx) => {
    const row: Record<string, unknown> = { updated_at: new Date().toISOString() };
    if (patch.name !== undefined) {
      const { org_id } = (await trx(db.t.roles).where('id', id).first('org_id')) as { org_id: string | null };
      row.name = patch.name;
      row.name_key = roleNameKey(patch.name, org_id);
    }
    if (patch.description !== undefined) row.description = patch.description;
    await db.models.Role.query(trx).findById(id).patch(row);
    if (patch.permissions) {
      await trx(db.t.rolePermissions).where('role_id', id).del();
      if (patch.permissions.length)
        await trx(db.t.rolePermissions).insert(patch.permissions.map((permission) => ({ role_id: id, permission })));
    }
  });
}

/**
 * The role goes first, then what hangs on it (foreign keys cascade where the engine has them; ClickHouse has
 * none): a failure half-way leaves only rows of a role that no longer exists, which nothing shows.
 */
export async function deleteRole(db: Database, id: string): Promise<void> {
  const { knex, t } = db;
  await db.models.Role.query().deleteById(id);
  for (const table of [t.rolePermissions, t.userRoles, t.orgMemberRoles]) await knex(table).where('role_id', id).del();
}

/** Whether a live user holds the role: directly (global roles) or as an organization member (org roles). */
export async function roleInUse(db: Database, id: string): Promise<boolean> {
  const { knex, t } = db;
  for (const table of [t.userRoles, t.orgMemberRoles]) {
    const row = await knex(table)
      .join(t.users, `${t.users}.id`, `${table}.user_id`)
      .where(`${table}.role_id`, id)
      .whereNull(`${t.users}.deleted_at`)
      .first(`${table}.user_id`);
    if (row) return true;
  }
  return false;
}
