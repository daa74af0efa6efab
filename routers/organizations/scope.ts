import { z } from 'zod';
import type { ChangeFeed } from '../../db/change-feed.ts';
import type { Database } from '../../db/database.ts';
import { findMembership, findOrganization } from '../../db/repositories/organizations.ts';
import { fieldError, ForbiddenError, NotFoundError } from '../../lib/errors.ts';
import { ROLES_CHANNEL } from '../auth/identity.ts';
import type { PermissionCatalogue } from '../permissions/service.ts';
import type { Caller } from '../common/context.ts';
import { FeedCache } from '../common/feed-cache.ts';

export const ORGS_CHANNEL = 'organizations';
export const ORG_HEADER = 'X-Scope-OrgID';

const orgIdSchema = z.uuid();

/** An organization as seen by one user: whether it is usable, and what their membership grants there. */
interface Standing {
  disabled: boolean;
  member: boolean;
  permissions: string[];
}

/**
 * The organization a request names in `X-Scope-OrgID` (docs/decisions.md "Identity and access"): the caller then holds their global
 * permissions plus the organization-scoped ones of their roles in that organization. Each user's standing in an organization is
 * cached up to `cache.size` entries and dropped whenever organizations, memberships or roles change on any node.
 */
export class OrgScopes {
  private readonly standings: FeedCache<Standing | null>;

  constructor(
    private readonly db: Database,
    private readonly feed: ChangeFeed,
    private readonly catalogue: PermissionCatalogue,
    cacheSize: number,
  ) {
    this.standings = new FeedCache(feed, [ORGS_CHANNEL, ROLES_CHANNEL], cacheSize);
  }

  /**
   * The caller acting in the organization `header` names: 400 when it is not a UUID, 404 when no live
   * organization has that id, 403 for a non-member or a disabled organization. Administrators may act in
   * every organization; an organization's roles never make anyone an administrator.
   */
  async enter(caller: Caller, header: string): Promise<{ caller: Caller; orgId: string }> {
    if (!orgIdSchema.safeParse(header).success) throw fieldError(ORG_HEADER, 'validation.uuid');
    // Ids are stored in lower case; the one the request carries (into tasks and audit records) must match them.
    const orgId = header.toLowerCase();
    const standing = await this.standings.get(`${orgId}/${caller.id}`, () => this.load(orgId, caller.id));
    if (!standing) throw new NotFoundError('org.not_found');
    if (caller.isAdmin) return { caller, orgId };
    if (!standing.member) throw new ForbiddenError('org.not_member');
    if (standing.disabled) throw new ForbiddenError('org.disabled');
    if (!standing.permissions.length) return { caller, orgId };
    const permissions = new Set([...caller.permissions, ...standing.permissions]);
    return { caller: { ...caller, permissions, org: { id: orgId, globalPermissions: caller.permissions } }, orgId };
  }

  /** After a change on this node: forget at once here, and tell the other nodes. */
  async changed(): Promise<void> {
    this.standings.clear();
    await this.feed.publish(ORGS_CHANNEL);
  }

  private async load(orgId: string, userId: string): Promise<Standing | null> {
    const org = await findOrganization(this.db, orgId);
    if (!org) return null;
    const membership = await findMembership(this.db, orgId, userId);
    // Only codes that act within one organization count here, whatever a role holds: roles saved before that
    // rule (or written around the API) would otherwise still grant global rights through the header.
    const permissions = (membership?.permissions ?? []).filter((code) => this.catalogue.orgScoped(code));
    return { disabled: org.status === 'disabled', member: Boolean(membership), permissions };
  }
}
