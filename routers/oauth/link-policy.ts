import type { UserWithRoles } from '../../db/repositories/users.ts';
import { UnauthorizedError } from '../../lib/errors.ts';
import { describe } from '../auth/identity.ts';

/** Permissions that only show things (`user:list`, `system:settings:view`), the viewer role's kind. */
const SHOWS_ONLY = /:(?:list|view)$/;

/**
 * Whether a provider account may be linked to this existing user because the provider vouches for its email. A
 * provider's say-so about an address is as strong as that provider's weakest account check, so it never hands
 * over an account that can change anything: administrators, operators, any role with a permission beyond listing
 * and viewing (held globally or in an organization). Those link only by logging in with their password.
 */
export function linkableByEmail(user: UserWithRoles): boolean {
  const { isAdmin, permissions } = describe(user);
  return !isAdmin && [...permissions].every((p) => SHOWS_ONLY.test(p));
}

/** The refusal to link such a user; its `login_failed` record names the user it was aimed at. */
export class PrivilegedLinkRefused extends UnauthorizedError {
  constructor(readonly target: { id: string; username: string }) {
    super('oauth.link_privileged');
  }
}
