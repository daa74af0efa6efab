import type { ChangeFeed } from '../../db/change-feed.ts';
import type { Database } from '../../db/database.ts';
import { findSession, touchSession, type SessionRow } from '../../db/repositories/sessions.ts';
import { findUserById, type UserWithRoles } from '../../db/repositories/users.ts';
import { andThen, type MaybePromise } from '../../lib/maybe-async.ts';
import { FeedCache } from '../common/feed-cache.ts';

export const USERS_CHANNEL = 'users';
export const ROLES_CHANNEL = 'roles';
export const SESSIONS_CHANNEL = 'sessions';
export const ADMIN_ROLE = 'admin';

/** The global admin role; an organization's role of that name confers nothing special (docs/decisions.md "Identity and access"). */
export const isAdminRole = (role: { name: string; org_id?: string | null }) => role.name === ADMIN_ROLE && !role.org_id;

export interface Identity {
  user: UserWithRoles;
  isAdmin: boolean;
  permissions: ReadonlySet<string>;
}

/**
 * Users (with their roles' permissions) and sessions as every request needs them, cached up to `cache.size`
 * entries and dropped whenever the change feed says users, roles or sessions changed on any node.
 */
export class IdentityStore {
  private readonly users: FeedCache<Identity | null>;
  private readonly sessions: FeedCache<SessionRow | null>;

  constructor(
    private readonly db: Database,
    private readonly feed: ChangeFeed,
    cacheSize: number,
  ) {
    this.users = new FeedCache(feed, [USERS_CHANNEL, ROLES_CHANNEL], cacheSize);
    this.sessions = new FeedCache(feed, [SESSIONS_CHANNEL], cacheSize);
  }

  // Cached answers come back as values, not promises: every authenticated request asks for both.
  identity(userId: string): MaybePromise<Identity | undefined> {
    const identity = this.users.getNow(userId, async () => {
      const user = await findUserById(this.db, userId);
      return user ? describe(user) : null;
    });
    return andThen(identity, (i) => i ?? undefined);
  }

  session(id: string): MaybePromise<SessionRow | undefined> {
    return andThen(
      this.sessions.getNow(id, async () => (await findSession(this.db, id)) ?? null),
      (s) => s ?? undefined,
    );
  }

  /** Records activity on a session; written through at most about once a minute to keep requests cheap. */
  touch(session: SessionRow, now: Date, writeEveryMs: number, expiresAt?: Date): MaybePromise<void> {
    if (!expiresAt && now.getTime() - sessionTimes(session).lastSeenAt < writeEveryMs) return;
    const next = {
      ...session,
      last_seen_at: now.toISOString(),
      expires_at: expiresAt?.toISOString() ?? session.expires_at,
    };
    this.sessions.replace(session.id, session, next);
    return touchSession(this.db, session.id, now, expiresAt);
  }

  /** After a change on this node: forget at once here, and tell the other nodes. */
  async changed(channel: typeof USERS_CHANNEL | typeof ROLES_CHANNEL | typeof SESSIONS_CHANNEL): Promise<void> {
    if (channel === SESSIONS_CHANNEL) this.sessions.clear();
    else this.users.clear();
    await this.feed.publish(channel);
  }
}

const parsedTimes = new WeakMap<SessionRow, { expiresAt: number; lastSeenAt: number }>();

/**
 * A session's times in milliseconds, parsed once per row: cached rows are replaced, never changed, and
 * parsing the two ISO times cost as much as the rest of a request's session check.
 */
export function sessionTimes(session: SessionRow): { expiresAt: number; lastSeenAt: number } {
  let times = parsedTimes.get(session);
  if (!times)
    parsedTimes.set(
      session,
      (times = { expiresAt: Date.parse(session.expires_at), lastSeenAt: Date.parse(session.last_seen_at) }),
    );
  return times;
}

export function describe(user: UserWithRoles): Identity {
  const roles = user.roles ?? [];
  return {
    user,
    isAdmin: roles.some(isAdminRole),
    permissions: new Set(roles.flatMap((r) => (r.permissions ?? []).map((p) => p.permission))),
  };
}
