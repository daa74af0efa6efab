import type { Database } from '../database.ts';
import { isoFromDb } from '../dialects/index.ts';
import type { OrganizationModel, OrganizationRow } from '../models.ts';
import { whereContains } from '../where-contains.ts';

export type OrganizationPatch = Partial<Pick<OrganizationRow, 'name' | 'description' | 'status'>>;

export interface MemberRow {
  user_id: string;
  username: string;
  roles: { id: string; name: string }[];
  created_at: string;
}

/** The membership of one user as the permission check needs it; undefined when not a member. */
export interface Membership {
  permissions: string[];
}

/** A page of live organizations, newest first; `id` narrows it to that one, `memberId` to those the user belongs to. */
export async function listOrganizations(
  db: Database,
  opts: { offset: number; limit: number; search?: string; id?: string; memberId?: string },
): Promise<{ rows: OrganizationModel[]; total: number }> {
  const query = db.models.Organization.query();
  if (opts.search) query.onBuildKnex((knexQuery) => whereContains(knexQuery, ['name'], opts.search!));
  if (opts.id) query.where('id', opts.id);
  if (opts.memberId) query.whereIn('id', db.knex(db.t.orgMembers).where('user_id', opts.memberId).select('org_id'));
  const total = await query.clone().resultSize();
  const rows = await query
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .offset(opts.offset)
    .limit(opts.limit);
  return { rows, total };
}

/** A live (not deleted) organization. */
export async function findOrganization(db: Database, id: string): Promise<OrganizationModel | undefined> {
  return db.models.Organization.query().findById(id);
}

/** The lock a check-then-write of an organization name holds (`db.withLock`), so two requests cannot both take it. */
export function organizationLockKey(name: string): string {
  return `organizations.name:${name.toLowerCase()}`;
}

/** Whether another live organization has this name, ignoring case. */
export async function organizationNameTaken(db: Database, name: string, exceptId?: string): Promise<boolean> {
  const q = db.knex(db.t.organizations).where('name_key', name.toLowerCase());
  if (exceptId) q.whereNot('id', exceptId);
  return Boolean(await q.first('id'));
}

export async function insertOrganization(
  db: Database,
  org: Pick<OrganizationRow, 'id' | 'name' | 'description' | 'status'>,
): Promise<void> {
  const now = new Date().toISOString();
  await db.models.Organization.query().insert({
    ...org,
    name_key: org.name.toLowerCase(),
    created_at: now,
    updated_at: now,
  });
}

export async function updateOrganization(db: Database, id: string, patch: OrganizationPatch): Promise<void> {
  const row: Record<string, unknown> = { ...patch, updated_at: new Date().toISOString() };
  if (patch.name !== undefined) row.name_key = patch.name.toLowerCase();
  await db.models.Organization.query().findById(id).patch(row);
}

/**
 * Soft delete: the row stays for the history (tasks and audit records keep its id) and frees its name, while
 * its memberships and its roles are removed, so nothing it granted outlives it.
 */
export async function softDeleteOrganization(db: Database, id: string): Promise<void> {
  const { t } = db;
  const now = new Date().toISOString();
  await db.dialect.transaction(db.knex, async (trx) => {
    await db.models.Organization.query(trx)
      .findById(id)
      .patch({ deleted_at: now, updated_at: now, name_key: null } as never);
    await trx(t.orgMemberRoles).where('org_id', id).del();
    await trx(t.orgMembers).where('org_id', id).del();
    const roles = trx(t.roles).where('org_id', id).select('id');
    await trx(t.rolePermissions).whereIn('role_id', roles).del();
    await trx(t.roles).where('org_id', id).del();
  });
}

/** The live users who are members, oldest membership first, each with their roles in the organization. */
export async function listMembers(db: Database, orgId: string): Promise<MemberRow[]> {
  const { knex, t } = db;
  const members = (await knex(t.orgMembers)
    .join(t.users, `${t.users}.id`, `${t.orgMembers}.user_id`)
    .where(`${t.orgMembers}.org_id`, orgId)
    .whereNull(`${t.users}.deleted_at`)
    .orderBy([{ column: `${t.orgMembers}.created_at` }, { column: `${t.orgMembers}.user_id` }])
    .select(
      `${t.orgMembers}.user_id as user_id`,
      `${t.users}.username as username`,
      `${t.orgMembers}.created_at as created_at`,
    )) as { user_id: string; username: string; created_at: unknown }[];
  const roles = (await knex(t.orgMemberRoles)
    .join(t.roles, `${t.roles}.id`, `${t.orgMemberRoles}.role_id`)
    .where(`${t.orgMemberRoles}.org_id`, orgId)
    .orderBy(`${t.roles}.name`)
    .select(`${t.orgMemberRoles}.user_id as user_id`, `${t.roles}.id as id`, `${t.roles}.name as name`)) as {
    user_id: string;
    id: string;
    name: string;
  }[];
  return members.map((m) => ({
    user_id: m.user_id,
    username: m.username,
    roles: roles.filter((r) => r.user_id === m.user_id).map(({ id, name }) => ({ id, name })),
    created_at: isoFromDb(m.created_at)!,
  }));
}

/** Makes the user a member (when not one yet) holding exactly `roleIds` in the organization. */
export async function setMember(db: Database, orgId: string, userId: string, roleIds: string[]): Promise<void> {
  const { t } = db;
  await db.dialect.transaction(db.knex, async (trx) => {
    const key = { org_id: orgId, user_id: userId };
    await db.upsert(
      {
        table: t.orgMembers,
        rows: [{ ...key, created_at: db.dialect.toDbTime(new Date()) }],
        key: ['org_id', 'user_id'],
      },
      trx,
    );
    await trx(t.orgMemberRoles).where(key).del();
    if (roleIds.length) await trx(t.orgMemberRoles).insert(roleIds.map((role_id) => ({ ...key, role_id })));
  });
}

export async function removeMember(db: Database, orgId: string, userId: string): Promise<void> {
  const { t } = db;
  await db.dialect.transaction(db.knex, async (trx) => {
    const key = { org_id: orgId, user_id: userId };
    await trx(t.orgMemberRoles).where(key).del();
    await trx(t.orgMembers).where(key).del();
  });
}

/** What a user's membership grants in the organization: the permissions of their roles there. */
export async function findMembership(db: Database, orgId: string, userId: string): Promise<Membership | undefined> {
  const { knex, t } = db;
  const rows = (await knex(t.orgMembers)
    .leftJoin(t.orgMemberRoles, (j) =>
      j
        .on(`${t.orgMemberRoles}.org_id`, `${t.orgMembers}.org_id`)
        .andOn(`${t.orgMemberRoles}.user_id`, `${t.orgMembers}.user_id`),
    )
    .leftJoin(t.rolePermissions, `${t.rolePermissions}.role_id`, `${t.orgMemberRoles}.role_id`)
    .where(`${t.orgMembers}.org_id`, orgId)
    .where(`${t.orgMembers}.user_id`, userId)
    .select(`${t.rolePermissions}.permission as permission`)) as { permission: string | null }[];
  if (!rows.length) return undefined;
  return { permissions: [...new Set(rows.flatMap((r) => (r.permission ? [r.permission] : [])))] };
}

/** The roles a user holds in every organization they belong to, each with its permissions. */
export async function findOrganizationRolesOf(
  db: Database,
  userId: string,
): Promise<{ name: string; org_id: string; permissions: string[] }[]> {
  const { knex, t } = db;
  const rows = (await knex(t.orgMemberRoles)
    .join(t.roles, `${t.roles}.id`, `${t.orgMemberRoles}.role_id`)
    .leftJoin(t.rolePermissions, `${t.rolePermissions}.role_id`, `${t.roles}.id`)
    .where(`${t.orgMemberRoles}.user_id`, userId)
    .select(
      `${t.roles}.id as id`,
      `${t.roles}.name as name`,
      `${t.orgMemberRoles}.org_id as org_id`,
      `${t.rolePermissions}.permission as permission`,
    )) as {
    id: string;
    name: string;
    org_id: string;
    permission: string | null;
  }[];
  const roles = new Map<string, { name: string; org_id: string; permissions: string[] }>();
  for (const r of rows) {
    const role = roles.get(r.id) ?? roles.set(r.id, { name: r.name, org_id: r.org_id, permissions: [] }).get(r.id)!;
    // Engines without NULLs in outer joins (ClickHouse) answer an empty string for a role with no permission.
    if (r.permission) role.permissions.push(r.permission);
  }
  return [...roles.values()];
}
