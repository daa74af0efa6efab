import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { Database } from '../../db/database.ts';
import { findOrganization } from '../../db/repositories/organizations.ts';
import {
  deleteRole,
  findRoleById,
  insertRole,
  listRoles,
  roleInUse,
  roleLockKey,
  roleNameTaken,
  updateRole,
  type RoleWithPermissions,
} from '../../db/repositories/roles.ts';
import { writeUnique } from '../../db/unique-write.ts';
import { BadRequestError, fieldError, NotFoundError } from '../../lib/errors.ts';
import type { AuditAction, AuditWriter } from '../audit/writer.ts';
import { isAdminRole, ROLES_CHANNEL, type IdentityStore } from '../auth/identity.ts';
import type { PermissionCatalogue } from '../permissions/service.ts';
import type { Actor } from '../common/context.ts';
import { cachedListPage, type FeedCache } from '../common/feed-cache.ts';
import { assertMayChange, assertMayGrant } from './guards.ts';
import {
  toRoleJson,
  type createRoleInput,
  type listRolesInput,
  type RoleJson,
  type updateRoleInput,
} from './schemas.ts';

/**
 * Roles: names unique within their scope (global, or one organization), permissions from the catalogue, system
 * roles fixed, roles in use kept.
 */
export class RoleService {
  constructor(
    private readonly db: Database,
    private readonly identities: IdentityStore,
    private readonly catalogue: PermissionCatalogue,
    private readonly audit: AuditWriter,
    private readonly pages: FeedCache<{ rows: RoleWithPermissions[]; total: number }>,
  ) {}

  /** A page of roles: `org_id` keeps one organization's; a request acting in an organization sees the global roles and that one's. */
  list(p: z.infer<typeof listRolesInput>, usableIn?: string) {
    return cachedListPage(this.pages, p, (q) => listRoles(this.db, q), toRoleJson, { org_id: p.org_id, usableIn });
  }

  async get(id: string, scope?: string): Promise<RoleJson> {
    return toRoleJson(await this.load(id, scope));
  }

  async create(input: z.infer<typeof createRoleInput>, { caller, req }: Actor): Promise<RoleJson> {
    const orgId = input.org_id ?? null;
    const permissions = this.checkPermissions(input.permissions, orgId);
    assertMayGrant(caller, [{ name: input.name, org_id: orgId, permissions }]);
    if (orgId) await this.checkOrganization(orgId, req.orgId);
    const id = randomUUID();
    await writeUnique(this.db, {
      keys: roleLockKey(input.name, orgId),
      check: () => this.checkNameFree(input.name, orgId),
      write: () => insertRole(this.db, id, { ...input, permissions }),
    });
    await this.identities.changed(ROLES_CHANNEL);
    const role = await this.get(id);
    await this.record('create', id, { caller, req }, { after: role });
    return role;
  }

  async update(
    id: string,
    input: Omit<z.infer<typeof updateRoleInput>, 'id'>,
    { caller, req }: Actor,
  ): Promise<RoleJson> {
    const before = toRoleJson(await this.load(id, req.orgId));
    assertMayChange(caller, { role: before });
    if (before.is_system && input.name !== undefined && input.name !== before.name)
      throw new BadRequestError('role.system_immutable');
    if (isAdminRole(before) && input.permissions !== undefined)
      throw new BadRequestError('role.admin_permissions_fixed');
    const renaming = input.name !== undefined && input.name !== before.name;
    const permissions = input.permissions ? this.checkPermissions(input.permissions, before.org_id) : undefined;
    if (permissions)
      assertMayGrant(caller, [
        {
          name: before.name,
          org_id: before.org_id,
          permissions: permissions.filter((p) => !before.permissions.includes(p)),
        },
      ]);
    await writeUnique(this.db, {
      keys: renaming ? [roleLockKey(input.name!, before.org_id)] : [],
      check: async () => {
        if (renaming) await this.checkNameFree(input.name!, before.org_id, id);
      },
      write: () => updateRole(this.db, id, { ...input, permissions }),
    });
    await this.identities.changed(ROLES_CHANNEL);
    const after = await this.get(id);
    await this.record('update', id, { caller, req }, { before, after });
    return after;
  }

  async remove(id: string, { caller, req }: Actor): Promise<void> {
    const role = toRoleJson(await this.load(id, req.orgId));
    assertMayChange(caller, { role });
    if (role.is_system) throw new BadRequestError('role.system_immutable');
    if (await roleInUse(this.db, id)) throw new BadRequestError('role.in_use');
    await deleteRole(this.db, id);
    await this.identities.changed(ROLES_CHANNEL);
    await this.record('delete', id, { caller, req }, { before: role });
  }

  /** The audit record of a change to the role `id`. */
  private record(action: AuditAction, id: string, { caller, req }: Actor, details: Record<string, unknown>) {
    return this.audit.write({ action, resource_type: 'role', resource_id: id, actor: caller, req, details });
  }

  /** A role the request may see: acting in an organization, another organization's roles do not exist. */
  private async load(id: string, scope?: string): Promise<RoleWithPermissions> {
    const role = await findRoleById(this.db, id);
    if (!role || (scope && role.org_id && role.org_id !== scope)) throw new NotFoundError('role.not_found');
    return role;
  }

  private checkPermissions(codes: string[], orgId: string | null): string[] {
    const unknown = codes.find((c) => !this.catalogue.has(c));
    if (unknown) throw new BadRequestError('role.unknown_permission', { code: unknown });
    const global = orgId ? codes.find((c) => !this.catalogue.orgScoped(c)) : undefined;
    if (global) throw new BadRequestError('role.not_org_scoped', { code: global });
    return [...new Set(codes)];
  }

  /** An organization's role is made for a live organization; acting in one, only for that one. */
  private async checkOrganization(orgId: string, scope?: string): Promise<void> {
    if ((scope && orgId !== scope) || !(await findOrganization(this.db, orgId)))
      throw fieldError('org_id', 'org.no_such_organization');
  }

  private async checkNameFree(name: string, orgId: string | null, exceptId?: string): Promise<void> {
    if (await roleNameTaken(this.db, name, orgId, exceptId)) throw new BadRequestError('role.name_taken');
  }
}
