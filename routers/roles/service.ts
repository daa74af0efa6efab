import { randomUUID } from 'node:crypto';
import type { Database } from '../../db/database.ts';
import { deleteRole, findRoleById, insertRole, listRoles, roleInUse, roleNameTaken, updateRole, type RoleWithPermissions } from '../../db/repositories/roles.ts';
import { BadRequestError, NotFoundError } from '../../lib/errors.ts';
import type { AuditWriter } from '../audit/writer.ts';
import { ADMIN_ROLE, ROLES_CHANNEL, type IdentityStore } from '../auth/identity.ts';
import type { PermissionCatalogue } from '../permissions/catalogue.ts';
import type { Actor } from '../shared/context.ts';
import { cachedPage, type FeedCache, type PageQuery } from '../shared/feed-cache.ts';
import { page } from '../shared/schemas.ts';
import { assertMayGrant } from './guards.ts';
import { toRoleJson, type RoleJson } from './schemas.ts';


/** Roles: names unique, permissions from the catalogue, system roles fixed, roles in use kept. */
export class RoleService {
  constructor(
    private readonly db: Database,
    private readonly identities: IdentityStore,
    private readonly catalogue: PermissionCatalogue,
    private readonly audit: AuditWriter,
    private readonly pages: FeedCache<{ rows: RoleWithPermissions[]; total: number }>,
  ) {}

  async list(p: PageQuery) {
    const { rows, total } = await cachedPage(this.pages, p, (q) => listRoles(this.db, q));
    return page(rows.map(toRoleJson), total, p);
  }


  async get(id: string): Promise<RoleJson> {
    return toRoleJson(await this.load(id));
  }

  async create(input: { name: string; description: string; permissions: string[] }, { caller, req }: Actor): Promise<RoleJson> {
    const permissions = this.checkPermissions(input.permissions);
    assertMayGrant(caller, [{ name: input.name, permissions }]);
    await this.checkNameFree(input.name);
    const id = randomUUID();
    try {
      await insertRole(this.db, id, { ...input, permissions });
    } catch (error) {
      if (this.db.dialect.isUniqueViolation(error)) throw new BadRequestError('role.name_taken');
      throw error;
    }
    await this.identities.changed(ROLES_CHANNEL);
    const role = await this.get(id);
    await this.audit.write({ action: 'create', resource_type: 'role', resource_id: id, actor: caller, req, details: { after: role } });
    return role;
  }

  async update(id: string, input: { name?: string; description?: string; permissions?: string[] }, { caller, req }: Actor): Promise<RoleJson> {
    const before = toRoleJson(await this.load(id));
    if (before.is_system && input.name !== undefined && input.name !== before.name) throw new BadRequestError('role.system_immutable');
    if (before.name === ADMIN_ROLE && input.permissions !== undefined) throw new BadRequestError('role.system_immutable');
    if (input.name !== undefined && input.name !== before.name) await this.checkNameFree(input.name, id);
    const permissions = input.permissions ? this.checkPermissions(input.permissions) : undefined;
    if (permissions) assertMayGrant(caller, [{ name: before.name, permissions: permissions.filter((p) => !before.permissions.includes(p)) }]);
    try {
      await updateRole(this.db, id, { ...input, permissions });
    } catch (error) {
      if (this.db.dialect.isUniqueViolation(error)) throw new BadRequestError('role.name_taken');
      throw error;
    }
    await this.identities.changed(ROLES_CHANNEL);
    const after = await this.get(id);
    await this.audit.write({ action: 'update', resource_type: 'role', resource_id: id, actor: caller, req, details: { before, after } });
    return after;
  }

  async remove(id: string, { caller, req }: Actor): Promise<void> {
    const role = toRoleJson(await this.load(id));
    if (role.is_system) throw new BadRequestError('role.system_immutable');
    if (await roleInUse(this.db, id)) throw new BadRequestError('role.in_use');
    await deleteRole(this.db, id);
    await this.identities.changed(ROLES_CHANNEL);
    await this.audit.write({ action: 'delete', resource_type: 'role', resource_id: id, actor: caller, req, details: { before: role } });
  }

  private async load(id: string): Promise<RoleWithPermissions> {
    const role = await findRoleById(this.db, id);
    if (!role) throw new NotFoundError('role.not_found');
    return role;
  }

  private checkPermissions(codes: string[]): string[] {
    const unknown = codes.find((c) => !this.catalogue.has(c));
    if (unknown) throw new BadRequestError('role.unknown_permission', { code: unknown });
    return [...new Set(codes)];
  }

  private async checkNameFree(name: string, exceptId?: string): Promise<void> {
    if (await roleNameTaken(this.db, name, exceptId)) throw new BadRequestError('role.name_taken');
  }
}
