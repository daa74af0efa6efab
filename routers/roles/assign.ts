import type { Database } from '../../db/database.ts';
import { findRolesByIds } from '../../db/repositories/roles.ts';
import { BadRequestError } from '../../lib/errors.ts';
import type { Caller } from '../common/context.ts';
import { assertMayGrant, grantedRoles } from './guards.ts';

/**
 * Checks role ids about to be assigned in one scope and answers them without repeats: each names an existing
 * role of that scope (global roles are assigned on the user, `orgId === null`; an organization's roles only
 * through its members), and the caller may grant those not in `held`.
 */
export async function assignableRoles(
  db: Database,
  ids: string[],
  held: string[],
  caller: Caller,
  orgId: string | null,
): Promise<string[]> {
  const unique = [...new Set(ids)];
  const roles = await findRolesByIds(db, unique);
  for (const id of unique) {
    const role = roles.find((r) => r.id === id);
    if (!role) throw new BadRequestError('user.unknown_role', { id });
    if (role.org_id !== orgId)
      throw new BadRequestError(orgId === null ? 'role.org_scoped' : 'role.not_in_org', { id });
  }
  assertMayGrant(caller, grantedRoles(roles.filter((r) => !held.includes(r.id))));
  return unique;
}
