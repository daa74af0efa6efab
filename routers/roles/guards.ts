import { ForbiddenError } from '../../lib/errors.ts';
import type { Caller } from '../shared/context.ts';
import { isAdminRole } from '../auth/identity.ts';

interface GrantedRole {
  name: string;
  org_id?: string | null;
  permissions: string[];
}

/** Roles as stored, in the form the guards below weigh them. */
export function grantedRoles(roles: { name: string; org_id?: string | null; permissions?: { permission: string }[] }[]): GrantedRole[] {
  return roles.map((r) => ({ name: r.name, org_id: r.org_id, permissions: (r.permissions ?? []).map((p) => p.permission) }));
}

/** The first part of `roles` the caller could not hand out themselves: the admin role, or a permission they lack. */
function ungrantable(caller: Caller, roles: GrantedRole[]): { adminRole: true } | { code: string } | undefined {
  if (caller.isAdmin) return undefined;
  for (const role of roles) {
    if (isAdminRole(role)) return { adminRole: true };
    const code = role.permissions.find((p) => !caller.permissions.has(p));
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

/**
 * Takeover guard: setting another user's password or email hands their access to the caller, so it takes
 * every right that user holds (as granting their roles would); only an administrator may do it to one.
 */
export function assertMayTakeOver(caller: Caller, target: { id: string; roles: GrantedRole[] }): void {
  if (target.id !== caller.id && ungrantable(caller, target.roles)) throw new ForbiddenError('user.takeover');
}
