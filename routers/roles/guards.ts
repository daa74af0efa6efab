import { ForbiddenError } from '../../lib/errors.ts';
import type { Caller } from '../shared/context.ts';
import { ADMIN_ROLE } from '../auth/identity.ts';

/**
 * Privilege escalation guard: a caller may grant (by editing a role or assigning one) only permissions they
 * hold themselves, and only an administrator may hand out the admin role.
 */
export function assertMayGrant(caller: Caller, roles: { name: string; permissions: string[] }[]): void {
  if (caller.isAdmin) return;
  for (const role of roles) {
    if (role.name === ADMIN_ROLE) throw new ForbiddenError('auth.admin_role_admin_only');
    const missing = role.permissions.find((p) => !caller.permissions.has(p));
    if (missing) throw new ForbiddenError('auth.cannot_grant', { code: missing });
  }
}
