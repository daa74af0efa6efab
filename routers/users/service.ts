import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { Database } from '../../db/database.ts';
import { findRolesByIds } from '../../db/repositories/roles.ts';
import { revokeUserSessions } from '../../db/repositories/sessions.ts';
import {
  findTakenIdentity,
  findUserById,
  identityLockKeys,
  insertUser,
  listUsers,
  setPasswordHash,
  softDeleteUser,
  unlockUser,
  updateUser,
  type UserWithRoles,
} from '../../db/repositories/users.ts';
import { writeUnique } from '../../db/unique-write.ts';
import { deepFreeze } from '../../lib/deep-freeze.ts';
import { BadRequestError, NotFoundError } from '../../lib/errors.ts';
import { andThen } from '../../lib/maybe-async.ts';
import type { AuditAction, AuditWriter } from '../audit/writer.ts';
import {
  ADMIN_ROLE,
  isAdminRole,
  SESSIONS_CHANNEL,
  USERS_CHANNEL,
  type Identity,
  type IdentityStore,
} from '../auth/identity.ts';
import type { PasswordHasher } from '../auth/password-hash.ts';
import type { UpdateMe } from '../auth/schemas.ts';
import type { Mailer } from '../mail/mailer.ts';
import { assignableRoles } from '../roles/assign.ts';
import { assertMayChange, userTarget } from '../roles/guards.ts';
import type { SettingsService } from '../settings/service.ts';
import type { Actor, Caller, RequestInfo } from '../common/context.ts';
import { cachedPage, type FeedCache, type PageQuery } from '../common/feed-cache.ts';
import { offsetOf, page } from '../common/schemas.ts';
import {
  effectiveStatus,
  lockEndsAt,
  toUserJson,
  type createUserInput,
  type updateUserInput,
  type UserJson,
} from './schemas.ts';
import { loadUserKeys, searchPage, type UserKeys } from './search.ts';
import { checkPasswordLength } from '../auth/password-policy.ts';

type MeJson = UserJson & {
  roles: { id: string; name: string; permissions: string[] }[];
  permissions: string[];
  password_generated: boolean;
};

export type CreateUser = z.infer<typeof createUserInput>;
export type UpdateUser = Omit<z.infer<typeof updateUserInput>, 'id'>;

/** Users: the business rules of docs/decisions.md "Identity and access" (uniqueness, guards, soft delete, session revocation). */
type StoredPage = { rows: UserWithRoles[]; total: number };

export class UserService {
  private readonly views = new WeakMap<StoredPage, { view: ReturnType<typeof page<UserJson>>; until: number }>();
  private readonly ownViews = new WeakMap<Identity, { view: MeJson; codes: readonly string[] | undefined }>();

  constructor(
    private readonly db: Database,
    private readonly identities: IdentityStore,
    private readonly hasher: PasswordHasher,
    private readonly settings: SettingsService,
    private readonly audit: AuditWriter,
    private readonly pages: FeedCache<StoredPage>,
    private readonly keys: FeedCache<UserKeys>,
    private readonly mailer: Mailer,
  ) {}

  /**
   * A page of users. A search's page is made anew from the kept live users each time (search.ts): searches
   * rarely repeat, and keeping their pages would push the plain list's pages out of the cache.
   */
  list(p: PageQuery) {
    const { search } = p;
    if (search)
      return andThen(
        this.keys.getNow('live', () => loadUserKeys(this.db)),
        (keys) => {
          const found = searchPage(keys, { offset: offsetOf(p), limit: p.page_size, search });
          return page(found.rows.map(toUserJson), found.total, p);
        },
      );
    return andThen(
      cachedPage(this.pages, p, (q) => listUsers(this.db, q)),
      (stored) => this.shown(stored, p),
    );
  }

  /**
   * A stored page as shown: kept (frozen) until the first lock in it ends, the one change of a shown user that
   * comes by time alone, not through the change feed.
   */
  private shown(stored: StoredPage, p: PageQuery) {
    const now = Date.now();
    const kept = this.views.get(stored);
    if (kept && now < kept.until) return kept.view;
    const view = deepFreeze(page(stored.rows.map(toUserJson), stored.total, p));
    let until = Infinity;
    for (const row of stored.rows) {
      const ends = lockEndsAt(row);
      if (ends > now && ends < until) until = ends;
    }
    this.views.set(stored, { view, until });
    return view;
  }

  async get(id: string): Promise<UserJson> {
    return toUserJson(await this.load(id));
  }

  /**
   * The caller's own record, with each role's permissions and the union of them; an administrator holds every
   * permission of the catalogue (`everyPermission`), including ones registered after their role was seeded.
   * Every page load of a frontend asks for it: built from the identity the request was authenticated with and
   * kept, frozen, as long as that identity is (it is dropped on any change to users or roles on any node).
   * Acting in an organization (`X-Scope-OrgID`), `permissions` adds what the caller's roles there grant: what
   * they may do in it, for a frontend to offer; `roles` stay the global ones.
   */
  me(caller: Caller, everyPermission: () => readonly string[]) {
    const own = this.ownView(caller, everyPermission);
    if (!caller.org) return own;
    return andThen(own, (view) => ({
      ...view,
      permissions: [...new Set([...view.permissions, ...caller.permissions])].sort(),
    }));
  }

  private ownView(caller: Caller, everyPermission: () => readonly string[]) {
    return andThen(this.identities.identity(caller.id), (identity) => {
      if (!identity) throw new NotFoundError('user.not_found');
      // The catalogue answers the same sorted array until a permission is registered.
      const codes = identity.isAdmin ? everyPermission() : undefined;
      const kept = this.ownViews.get(identity);
      if (kept && kept.codes === codes) return kept.view;
      const user = identity.user;
      const roles = (user.roles ?? []).map((r) => ({
        id: r.id,
        name: r.name,
        permissions: (r.permissions ?? []).map((p) => p.permission).sort(),
      }));
      const view = {
        ...toUserJson(user),
        roles,
        permissions: codes ? [...codes] : [...new Set(roles.flatMap((r) => r.permissions))].sort(),
        // Only the first start's generated password is stored without a change time (bootstrap.ts).
        password_generated: user.password_changed_at === null,
      };
      // A lock that ends by time alone changes the status shown: such a view is not kept.
      const lockEnds = lockEndsAt(user);
      if (lockEnds === Infinity || lockEnds <= Date.now())
        this.ownViews.set(identity, { view: deepFreeze(view), codes });
      return view;
    });
  }

  async create(input: CreateUser, { caller, req }: Actor): Promise<UserJson> {
    this.checkPasswordLength(input.password);
    const id = randomUUID();
    await writeUnique(this.db, {
      keys: identityLockKeys(input.username, input.email),
      check: () => this.checkUnique(input.username, input.email),
      write: async () => {
        const roleIds = await assignableRoles(this.db, input.role_ids ?? [], [], caller, null);
        await insertUser(
          this.db,
          {
            id,
            username: input.username,
            email: input.email,
            password_hash: await this.hasher.hash(input.password),
            full_name: input.full_name ?? '',
            avatar: input.avatar ?? '',
            status: 'active',
            mfa_enabled: input.mfa_enabled ?? false,
            locale: req.locale,
          },
          roleIds,
        );
      },
    });
    return this.created(id, caller, req);
  }

  /**
   * What follows the insert of a user, whoever made it (an administrator, or the user's own first OAuth login):
   * every node forgets its cached users, the creation is audited, the welcome email goes out when enabled.
   */
  async created(
    id: string,
    actor: { id: string | null; username: string },
    req: RequestInfo,
    details: Record<string, unknown> = {},
  ): Promise<UserJson> {
    await this.identities.changed(USERS_CHANNEL);
    const user = await this.get(id);
    await this.audit.write({
      action: 'create',
      resource_type: 'user',
      resource_id: id,
      actor,
      req,
      details: { ...details, after: user },
    });
    if (this.settings.get<boolean>('welcome_email_enabled'))
      this.mailer.send({ email: user.email, username: user.username, locale: req.locale }, 'welcome', {});
    return user;
  }

  async update(id: string, input: UpdateUser, { caller, req }: Actor): Promise<UserJson> {
    // Any field of another user, their roles included, takes every right they hold (so taking a role away takes
    // the right to grant it); roles added are weighed as grants.
    const before = await this.loadChangeable(id, caller);
    const currentRoleIds = before.roles.map((r) => r.id);
    const roleIds = input.role_ids
      ? await assignableRoles(this.db, input.role_ids, currentRoleIds, caller, null)
      : undefined;
    const disabling = input.status === 'disabled' && effectiveStatus(before) !== 'disabled';
    const losingAdmin =
      roleIds !== undefined && isAdmin(before) && !(await findRolesByIds(this.db, roleIds)).some(isAdminRole);
    if (disabling && id === caller.id) throw new BadRequestError('user.self_disable');
    const { role_ids: _ignored, ...fields } = input;
    const done = await writeUnique(this.db, {
      keys: identityLockKeys(undefined, input.email),
      check: () => this.checkUnique(undefined, input.email, id),
      write: () =>
        updateUser(
          this.db,
          id,
          fields,
          roleIds,
          (disabling || losingAdmin) && isActiveAdmin(before) ? ADMIN_ROLE : undefined,
        ),
    });
    if (!done) throw new BadRequestError('user.last_admin');
    // Users first: a request racing this one then meets "invalid user" (E4012), not a revoked session.
    await this.identities.changed(USERS_CHANNEL);
    if (disabling) {
      await revokeUserSessions(this.db, id);
      await this.identities.changed(SESSIONS_CHANNEL);
    }
    const after = await this.get(id);
    await this.record('update', id, { caller, req }, { before: toUserJson(before), after });
    return after;
  }

  async remove(id: string, { caller, req }: Actor): Promise<void> {
    if (id === caller.id) throw new BadRequestError('user.self_delete');
    const user = await this.loadChangeable(id, caller);
    if (!(await softDeleteUser(this.db, id, isActiveAdmin(user) ? ADMIN_ROLE : undefined)))
      throw new BadRequestError('user.last_admin');
    await this.identities.changed(USERS_CHANNEL);
    await revokeUserSessions(this.db, id);
    await this.identities.changed(SESSIONS_CHANNEL);
    await this.record('delete', id, { caller, req }, { before: toUserJson(user) });
  }

  /** Sets a password (own change or an administrator's reset) and ends every session of that user. */
  async setPassword(
    id: string,
    password: string,
    action: 'password_change' | 'password_reset',
    { caller, req }: Actor,
    field = 'password',
  ): Promise<void> {
    await this.loadChangeable(id, caller);
    this.checkPasswordLength(password, field);
    await setPasswordHash(this.db, id, await this.hasher.hash(password));
    await revokeUserSessions(this.db, id);
    // updated_at moved: user lists and identities are stale too, not only sessions.
    await this.identities.changed(USERS_CHANNEL);
    await this.identities.changed(SESSIONS_CHANNEL);
    await this.record(action, id, { caller, req });
  }

  async changeOwnPassword(oldPassword: string, newPassword: string, actor: Actor): Promise<void> {
    const user = await this.load(actor.caller.id);
    if (!(await this.hasher.verify(oldPassword, user.password_hash)))
      throw new BadRequestError('auth.wrong_old_password');
    await this.setPassword(user.id, newPassword, 'password_change', actor, 'new_password');
  }

  /** The caller's own details: a new email or an MFA change takes the current password, as a password change does. */
  async updateOwn({ password, ...fields }: UpdateMe, actor: Actor): Promise<UserJson> {
    const user = await this.load(actor.caller.id);
    const newEmail = fields.email !== undefined && fields.email.toLowerCase() !== user.email.toLowerCase();
    const newMfa = fields.mfa_enabled !== undefined && fields.mfa_enabled !== user.mfa_enabled;
    if ((newEmail || newMfa) && !(password && (await this.hasher.verify(password, user.password_hash))))
      throw new BadRequestError('auth.confirm_password');
    return this.update(user.id, fields, actor);
  }

  /** Ends a lock: a status change like any other, and it undoes the brute-force protection of that account. */
  async unlock(id: string, { caller, req }: Actor): Promise<UserJson> {
    await this.loadChangeable(id, caller);
    await unlockUser(this.db, id);
    await this.identities.changed(USERS_CHANNEL);
    await this.record('unlock', id, { caller, req });
    return this.get(id);
  }

  /** The audit record of a change to the user `id`. */
  private record(action: AuditAction, id: string, { caller, req }: Actor, details?: Record<string, unknown>) {
    return this.audit.write({ action, resource_type: 'user', resource_id: id, actor: caller, req, details });
  }

  private async load(id: string): Promise<UserWithRoles> {
    const user = await findUserById(this.db, id);
    if (!user) throw new NotFoundError('user.not_found');
    return user;
  }

  /** A user the caller is about to change: 403 unless the caller holds everything that user holds (guards.ts). */
  private async loadChangeable(id: string, caller: Caller): Promise<UserWithRoles> {
    const user = await this.load(id);
    assertMayChange(caller, await userTarget(this.db, user));
    return user;
  }

  checkPasswordLength(password: string, field = 'password'): void {
    checkPasswordLength(password, this.settings.get<number>('password_min_length'), field);
  }

  private async checkUnique(username: string | undefined, email: string | undefined, exceptId?: string): Promise<void> {
    if (username === undefined && email === undefined) return;
    const taken = await findTakenIdentity(this.db, username, email, exceptId);
    if (taken === 'username') throw new BadRequestError('user.username_taken');
    if (taken === 'email') throw new BadRequestError('user.email_taken');
  }
}

const isAdmin = (u: UserWithRoles) => (u.roles ?? []).some(isAdminRole);

/** Only an active administrator's removal can leave the service without one. */
const isActiveAdmin = (u: UserWithRoles) => isAdmin(u) && effectiveStatus(u) === 'active';
