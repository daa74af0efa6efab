import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { Database } from '../../db/database.ts';
import type { OrganizationModel } from '../../db/models.ts';
import {
  findOrganization,
  insertOrganization,
  listMembers,
  listOrganizations,
  organizationLockKey,
  organizationNameTaken,
  removeMember,
  setMember,
  softDeleteOrganization,
  updateOrganization,
} from '../../db/repositories/organizations.ts';
import { findRolesByIds } from '../../db/repositories/roles.ts';
import { findUserById } from '../../db/repositories/users.ts';
import { writeUnique } from '../../db/unique-write.ts';
import { BadRequestError, fieldError, NotFoundError } from '../../lib/errors.ts';
import type { AuditAction, AuditWriter } from '../audit/writer.ts';
import { ROLES_CHANNEL, type IdentityStore } from '../auth/identity.ts';
import { assignableRoles } from '../roles/assign.ts';
import { assertMayChange, assertMayGrant, grantedRoles, userTarget } from '../roles/guards.ts';
import type { Actor, Caller } from '../common/context.ts';
import { cachedListPage, type FeedCache, type PageQuery } from '../common/feed-cache.ts';
import type { OrgScopes } from './scope.ts';
import {
  toOrganizationJson,
  type createOrganizationInput,
  type OrganizationDetailJson,
  type OrganizationJson,
  type updateOrganizationInput,
} from './schemas.ts';

type RoleRef = { id: string; name: string };

export type CreateOrganization = z.infer<typeof createOrganizationInput>;
export type UpdateOrganization = Omit<z.infer<typeof updateOrganizationInput>, 'id'>;

/**
 * Organizations (docs/decisions.md "Identity and access"): names unique among live ones, members holding the organization's own roles, soft
 * delete. A request acting in an organization (`X-Scope-OrgID`) sees and manages only that one.
 */
export class OrganizationService {
  constructor(
    private readonly db: Database,
    private readonly scopes: OrgScopes,
    private readonly identities: IdentityStore,
    private readonly audit: AuditWriter,
    private readonly pages: FeedCache<{ rows: OrganizationModel[]; total: number }>,
  ) {}

  /** A page of organizations; a request acting in one (`X-Scope-OrgID`) sees only that one. */
  list(p: PageQuery, scope?: string) {
    return cachedListPage(this.pages, p, (q) => listOrganizations(this.db, q), toOrganizationJson, { id: scope });
  }

  /** The organizations the caller may name in `X-Scope-OrgID`: an administrator's every one, anyone else's their own. */
  mine(p: PageQuery, caller: Caller) {
    const memberId = caller.isAdmin ? undefined : caller.id;
    return cachedListPage(this.pages, p, (q) => listOrganizations(this.db, q), toOrganizationJson, { memberId });
  }

  async get(id: string, scope?: string): Promise<OrganizationDetailJson> {
    const org = await this.load(id, scope);
    return { ...toOrganizationJson(org), members: await listMembers(this.db, id) };
  }

  async create(input: CreateOrganization, { caller, req }: Actor): Promise<OrganizationDetailJson> {
    const id = randomUUID();
    await writeUnique(this.db, {
      keys: organizationLockKey(input.name),
      check: () => this.checkNameFree(input.name),
      write: () => insertOrganization(this.db, { id, ...input }),
    });
    await this.scopes.changed();
    const org = await this.get(id);
    await this.record('create', id, { caller, req }, { after: withoutMembers(org) });
    return org;
  }

  async update(id: string, input: UpdateOrganization, { caller, req }: Actor): Promise<OrganizationDetailJson> {
    const before = toOrganizationJson(await this.load(id, req.orgId));
    const { name } = input;
    await writeUnique(this.db, {
      keys: name === undefined ? [] : [organizationLockKey(name)],
      check: async () => {
        if (name !== undefined) await this.checkNameFree(name, id);
      },
      write: () => updateOrganization(this.db, id, input),
    });
    await this.scopes.changed();
    const after = await this.get(id);
    await this.record('update', id, { caller, req }, { before, after: withoutMembers(after) });
    return after;
  }

  /** Soft delete; the organization's memberships and roles go with it (see docs/decisions.md). */
  async remove(id: string, { caller, req }: Actor): Promise<void> {
    const before = await this.get(id, req.orgId);
    await softDeleteOrganization(this.db, id);
    await this.scopes.changed();
    // Its roles are gone: role lists must forget them.
    await this.identities.changed(ROLES_CHANNEL);
    await this.record('delete', id, { caller, req }, { before });
  }

  /**
   * Makes a user a member holding exactly `roleIds` (roles of this organization). As with global roles, it is a
   * change to that user (guards.ts), and the caller must be able to grant each role added and each role taken away.
   */
  async setMember(id: string, userId: string, roleIds: string[], actor: Actor): Promise<OrganizationDetailJson> {
    const { caller, req } = actor;
    const before = await this.get(id, req.orgId);
    const user = await this.changeableUser(userId, caller);
    const was = before.members.find((m) => m.user_id === userId);
    const held = was?.roles.map((r) => r.id) ?? [];
    const assigned = await assignableRoles(this.db, roleIds, held, caller, id);
    await this.assertMayRevoke(held, assigned, caller);
    await setMember(this.db, id, userId, assigned);
    await this.scopes.changed();
    const after = await this.get(id);
    const now = after.members.find((m) => m.user_id === userId);
    await this.auditMembership(id, { user_id: userId, username: user.username }, was, now ?? { roles: [] }, actor);
    return after;
  }

  async removeMember(id: string, userId: string, actor: Actor): Promise<void> {
    const was = (await this.get(id, actor.req.orgId)).members.find((m) => m.user_id === userId);
    if (!was) throw new NotFoundError('org.member_not_found');
    await this.changeableUser(userId, actor.caller);
    await this.assertMayRevoke(
      was.roles.map((r) => r.id),
      [],
      actor.caller,
    );
    await removeMember(this.db, id, userId);
    await this.scopes.changed();
    await this.auditMembership(id, was, was, undefined, actor);
  }

  /** A membership change is an update of the organization; `undefined` before or after means not a member. */
  private async auditMembership(
    id: string,
    member: { user_id: string; username: string },
    before: { roles: RoleRef[] } | undefined,
    after: { roles: RoleRef[] } | undefined,
    { caller, req }: Actor,
  ): Promise<void> {
    const roles = (m: { roles: RoleRef[] } | undefined) => (m ? { roles: m.roles } : null);
    await this.record(
      'update',
      id,
      { caller, req },
      {
        member: { user_id: member.user_id, username: member.username },
        before: roles(before),
        after: roles(after),
      },
    );
  }

  /** The audit record of a change to the organization `id`. */
  private record(
    action: 'create' | 'update' | 'delete',
    id: string,
    { caller, req }: Actor,
    details: Record<string, unknown>,
  ) {
    return this.audit.write({ action, resource_type: 'organization', resource_id: id, actor: caller, req, details });
  }

  /** The user whose membership changes: 403 unless the caller holds everything that user holds (guards.ts). */
  private async changeableUser(userId: string, caller: Caller) {
    const user = await findUserById(this.db, userId);
    if (!user) throw fieldError('user_id', 'org.no_such_user');
    assertMayChange(caller, await userTarget(this.db, user));
    return user;
  }

  /** Taking a role away needs the right to grant it, as for global roles (so members cannot demote stronger ones). */
  private async assertMayRevoke(held: string[], kept: string[], caller: Caller): Promise<void> {
    const revoked = held.filter((r) => !kept.includes(r));
    if (revoked.length) assertMayGrant(caller, grantedRoles(await findRolesByIds(this.db, revoked)));
  }

  /** A live organization the request may see: with `X-Scope-OrgID`, only that one. */
  private async load(id: string, scope?: string): Promise<OrganizationModel> {
    const org = scope && scope !== id ? undefined : await findOrganization(this.db, id);
    if (!org) throw new NotFoundError('org.not_found');
    return org;
  }

  private async checkNameFree(name: string, exceptId?: string): Promise<void> {
    if (await organizationNameTaken(this.db, name, exceptId)) throw new BadRequestError('org.name_taken');
  }
}

const withoutMembers = ({ members: _members, ...org }: OrganizationDetailJson): OrganizationJson => org;
