import type { Database } from '../../db/database.ts';
import { findOrganizationRolesOf } from '../../db/repositories/organizations.ts';
import { ForbiddenError } from '../../lib/errors.ts';
import type { Caller } from '../common/context.ts';
import { isAdminRole } from '../auth/identity.ts';

interface GrantedRole {
  name: string;
  org_id?: string | null;
  permissions: string[];
}

/** Roles as stored, in the form the guards below weigh them. */
export function grantedRoles(
  roles: { name: string; org_id?: string | null; permissions?: { permission: string }[] }[],
): GrantedRole[] {
  return roles.map((r) => ({
    name: r.name,
    org_id: r.org_id,
    permissions: (r.permissions ?? []).map((p) => p.permission),
  }));
}

/**
 * Whether the caller holds `code` where a role of `orgId` (none: a global role) acts: a global permission
 * counts everywhere, one the caller holds in the organization the request acts in only for that organization's
 * roles. Otherwise acting in A would let a member hand out, or take over, in B or globally what they hold in A.
 */
function holds(caller: Caller, code: string, orgId: string | null | undefined): boolean {
  if (!caller.org) return caller.permissions.has(code);
  return caller.org.globalPermissions.has(code) || (orgId === caller.org.id && caller.permissions.has(code));
}

/** The first part of `roles` the caller could not hand out themselves: the admin role, or a permission they lack. */
function ungrantable(caller: Caller, roles: GrantedRole[]): { adminRole: true } | { code: string } | undefined {
  if (caller.isAdmin) return undefined;
  for (const role of roles) {
    if (isAdminRole(role)) return { adminRole: true };
    const code = role.permissions.find((p) => !holds(caller, p, role.org_id));
    if (code) return { code };
  }
  return undefined;
}

/**
 * Privilege escalation guard: a caller may grant (by editing a role or assigning one) only permissions they
 * hold themselves, and only an administrator may hand out the admin role.
 */
export function assertMayGrant(caller: Caller, roles: GrantedRole[]): void {
  const denied = ungrantable(caller, roles);
  if (denied && 'code' in denied) throw new ForbiddenError('auth.cannot_grant', { code: denied.code });
  if (denied) throw new ForbiddenError('auth.admin_role_admin_only');
}

/** What a change is weighed against: a user with everything they hold, or one role. */
export type PrivilegeTarget = { user: string; roles: GrantedRole[] } | { role: GrantedRole & { is_system: boolean } };

/**
 * The privilege rule (README "Identity rules in short", docs/decisions.md "Identity and access"): any change to
 * a user or a role needs every permission the target holds, where it holds it, so nobody changes (or takes
 * over, locks out, unlocks) someone more powerful, nor a role they could not hand out. A user holds their global
 * roles and their roles in every organization they belong to; the caller holds their global permissions, plus
 * in the organization `X-Scope-OrgID` names their roles there. Administrators pass; a user changing their own
 * record passes (what they grant themselves is still checked); a system role is changed only by administrators.
 */
export function assertMayChange(caller: Caller, target: PrivilegeTarget): void {
  if (caller.isAdmin) return;
  if ('user' in target) {
    if (target.user !== caller.id && ungrantable(caller, target.roles))
      throw new ForbiddenError('user.more_privileged');
    return;
  }
  if (target.role.is_system) throw new ForbiddenError('role.system_admin_only');
  const { permissions, org_id } = target.role;
  const code = permissions.find((p) => !holds(caller, p, org_id));
  if (code) throw new ForbiddenError('role.more_privileged', { code });
}

/** A user as the privilege rule weighs them: their global roles and their roles in every organization they belong to. */
export async function userTarget(
  db: Database,
  user: { id: string; roles: Parameters<typeof grantedRoles>[0] },
): Promise<PrivilegeTarget> {
  return { user: user.id, roles: [...grantedRoles(user.roles), ...(await findOrganizationRolesOf(db, user.id))] };
}
