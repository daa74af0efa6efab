import type { Knex } from 'knex';
import type { Database } from '../database.ts';
import type { UserModel, UserRow } from '../models.ts';
import { whereContains } from '../where-contains.ts';

export type UserWithRoles = UserModel & {
  roles: { id: string; name: string; org_id: string | null; permissions: { permission: string }[] }[];
};

const withRoles = '[roles.permissions]';

export interface NewUser {
  id: string;
  username: string;
  email: string;
  password_hash: string;
  full_name: string;
  avatar: string;
  status: UserRow['status'];
  mfa_enabled: boolean;
  locale: string;
  /** Null only for a generated password nobody has changed yet (the first start's administrator). */
  password_changed_at?: null;
}

export type UserPatch = Partial<
  Pick<
    UserRow,
    'email' | 'status' | 'full_name' | 'avatar' | 'mfa_enabled' | 'locale' | 'locked_until' | 'failed_attempts'
  >
>;

export async function findUserById(db: Database, id: string): Promise<UserWithRoles | undefined> {
  return (await db.models.User.query().findById(id).withGraphFetched(withRoles)) as UserWithRoles | undefined;
}

/** A live user by username or email, case-insensitively. */
export async function findUserByLogin(db: Database, login: string): Promise<UserWithRoles | undefined> {
  const column = login.includes('@') ? 'email_key' : 'username_key';
  return (await db.models.User.query().findOne(column, login.toLowerCase()).withGraphFetched(withRoles)) as
    UserWithRoles | undefined;
}

const newestFirst: { column: string; order: 'desc' }[] = [
  { column: 'created_at', order: 'desc' },
  { column: 'id', order: 'desc' },
];

/** Users as lists show them: with their roles' id and name. */
function withRoleNames(db: Database, query: ReturnType<Database['models']['User']['query']>) {
  const { Role } = db.models;
  return query
    .withGraphFetched('roles')
    .modifyGraph('roles', (b) => b.select(`${Role.tableName}.id`, `${Role.tableName}.name`));
}

export async function listUsers(
  db: Database,
  opts: { offset: number; limit: number; search?: string },
): Promise<{ rows: UserWithRoles[]; total: number }> {
  const query = db.models.User.query();
  if (opts.search) query.onBuildKnex((knexQuery) => whereContains(knexQuery, ['username', 'email'], opts.search!));
  const total = await query.clone().resultSize();
  const rows = (await withRoleNames(
    db,
    query.orderBy(newestFirst).offset(opts.offset).limit(opts.limit),
  )) as UserWithRoles[];
  return { rows, total };
}

/** The columns a list shows of a user, and what its status and a search need. */
const LIVE_USER_COLUMNS = [
  'id',
  'username',
  'email',
  'username_key',
  'email_key',
  'full_name',
  'avatar',
  'status',
  'locked_until',
  'mfa_enabled',
  'last_login_at',
  'created_at',
  'updated_at',
] as const;

/** A live user as lists show them (their roles' id and name), with the lower-cased username and email. */
export type LiveUser = Omit<Pick<UserRow, (typeof LIVE_USER_COLUMNS)[number]>, 'username_key' | 'email_key'> & {
  username_key: string;
  email_key: string;
  roles: { id: string; name: string }[];
};

/**
 * Every live user with their roles' id and name, newest first (the order of listUsers). Two plain statements,
 * rows parsed as the model parses them: objection's graph fetch of the same takes several times as long.
 */
export async function listLiveUsers(db: Database): Promise<LiveUser[]> {
  const { knex, t, models } = db;
  const [users, links] = await Promise.all([
    db.read(
      knex(t.users)
        .whereNull('deleted_at')
        .orderBy(newestFirst)
        .select([...LIVE_USER_COLUMNS]),
    ),
    db.read<{ user_id: string; id: string; name: string }>(
      knex(t.userRoles)
        .join(t.roles, `${t.roles}.id`, `${t.userRoles}.role_id`)
        .orderBy(`${t.roles}.id`)
        .select(`${t.userRoles}.user_id as user_id`, `${t.roles}.id as id`, `${t.roles}.name as name`),
    ),
  ]);
  const roles = new Map<string, { id: string; name: string }[]>();
  for (const { user_id, id, name } of links) {
    const held = roles.get(user_id);
    if (held) held.push({ id, name });
    else roles.set(user_id, [{ id, name }]);
  }
  return users.map(
    (row) =>
      Object.assign(models.User.fromDatabaseJson(row), {
        roles: roles.get(row.id as string) ?? [],
      }) as unknown as LiveUser,
  );
}

/** Which of username / email is already held by a live user (other than `exceptId`). */
export async function findTakenIdentity(
  db: Database,
  username: string | undefined,
  email: string | undefined,
  exceptId?: string,
): Promise<'username' | 'email' | undefined> {
  const q = db
    .knex(db.t.users)
    .select('username_key', 'email_key')
    .where((w) => {
      if (username) w.orWhere('username_key', username.toLowerCase());
      if (email) w.orWhere('email_key', email.toLowerCase());
    });
  if (exceptId) q.whereNot('id', exceptId);
  const rows = (await q) as { username_key: string | null; email_key: string | null }[];
  if (username && rows.some((r) => r.username_key === username.toLowerCase())) return 'username';
  if (email && rows.some((r) => r.email_key === email.toLowerCase())) return 'email';
  return undefined;
}

/**
 * The lock keys of a username and an email (either may be absent): whoever checks that they are free and then
 * writes them holds these through `db.withLock`, so two requests cannot both take one name.
 */
export function identityLockKeys(username: string | undefined, email: string | undefined): string[] {
  return [
    ...(username ? [`users.username:${username.toLowerCase()}`] : []),
    ...(email ? [`users.email:${email.toLowerCase()}`] : []),
  ];
}

/** Inserts the user with its roles; `also` writes more rows in the same transaction (an OAuth link). */
export async function insertUser(
  db: Database,
  user: NewUser,
  roleIds: string[],
  also?: (trx: Knex) => Promise<void>,
): Promise<void> {
  const now = new Date().toISOString();
  await db.dialect.transaction(db.knex, async (trx) => {
    const insertRow = () =>
      db.models.User.query(trx).insert({
        password_changed_at: now,
        ...user,
        username_key: user.username.toLowerCase(),
        email_key: user.email.toLowerCase(),
        failed_attempts: 0,
        created_at: now,
        updated_at: now,
      });
    await db.dialect.insertFamily(insertRow, async () => {
      if (roleIds.length) await trx(db.t.userRoles).insert(roleIds.map((role_id) => ({ user_id: user.id, role_id })));
      await also?.(trx);
    });
  });
}

/**
 * Whether a live, active user other than `userId` holds the global role `roleName`. It first locks that role's row
 * until the transaction ends, so changes that might remove the role's last holder run one after another and
 * each sees the one before (two administrators disabling each other at once cannot both succeed). SQLite's
 * single connection serialises them anyway; engines without row locks rely on `keepingRole`'s lock.
 */
async function anotherActiveHolder(db: Database, trx: Knex, roleName: string, userId: string): Promise<boolean> {
  const { t } = db;
  await db.dialect.lockForUpdate(trx(t.roles).where('name', roleName).whereNull('org_id')).first('id');
  const row = await trx(t.users)
    .join(t.userRoles, `${t.userRoles}.user_id`, `${t.users}.id`)
    .join(t.roles, `${t.roles}.id`, `${t.userRoles}.role_id`)
    .whereNull(`${t.users}.deleted_at`)
    .where(`${t.users}.status`, 'active')
    .where(`${t.roles}.name`, roleName)
    .whereNull(`${t.roles}.org_id`)
    .whereNot(`${t.users}.id`, userId)
    .first(`${t.users}.id`);
  return Boolean(row);
}

/** Runs a change that must not remove the last active holder of `keepRole` one at a time in this process. */
function keepingRole<T>(db: Database, keepRole: string | undefined, fn: () => Promise<T>): Promise<T> {
  return keepRole ? db.withLock(`users.role-holders:${keepRole}`, fn) : fn();
}

/**
 * Applies the patch (and replaces the roles when given). With `keepRole`, changes nothing and answers false when
 * no other active user would hold that role. Without transactions a failure half-way leaves the user with
 * fewer roles, never more.
 */
export async function updateUser(
  db: Database,
  id: string,
  patch: UserPatch,
  roleIds?: string[],
  keepRole?: string,
): Promise<boolean> {
  const row: Record<string, unknown> = { ...patch, updated_at: new Date().toISOString() };
  if (patch.email !== undefined) row.email_key = patch.email.toLowerCase();
  return keepingRole(db, keepRole, () =>
    db.dialect.transaction(db.knex, async (trx) => {
      if (keepRole && !(await anotherActiveHolder(db, trx, keepRole, id))) return false;
      await db.models.User.query(trx).findById(id).patch(row);
      if (roleIds) {
        await trx(db.t.userRoles).where('user_id', id).del();
        if (roleIds.length) await trx(db.t.userRoles).insert(roleIds.map((role_id) => ({ user_id: id, role_id })));
      }
      return true;
    }),
  );
}

/** Soft delete; frees the username and email for new users. `keepRole` as for updateUser. */
export async function softDeleteUser(db: Database, id: string, keepRole?: string): Promise<boolean> {
  const now = new Date().toISOString();
  return keepingRole(db, keepRole, () =>
    db.dialect.transaction(db.knex, async (trx) => {
      if (keepRole && !(await anotherActiveHolder(db, trx, keepRole, id))) return false;
      await db.models.User.query(trx)
        .findById(id)
        .patch({ deleted_at: now, updated_at: now, username_key: null, email_key: null } as never);
      return true;
    }),
  );
}

export async function setPasswordHash(db: Database, id: string, passwordHash: string): Promise<void> {
  const now = new Date().toISOString();
  await db.models.User.query()
    .findById(id)
    .patch({ password_hash: passwordHash, password_changed_at: now, updated_at: now } as never);
}

/**
 * Counts one failed login atomically and locks the account when the count reaches `maxAttempts`.
 * Returns true when this very failure locked it (so the caller can notify once).
 * Failures while a lock holds are not counted (the lock already stops them). A lock that has run out still
 * reads `locked` until the next successful login, so it counts as open here: otherwise an account locked
 * once could be guessed at without limit after its lock ended.
 */
export async function recordLoginFailure(
  db: Database,
  id: string,
  maxAttempts: number,
  lockUntil: Date,
): Promise<boolean> {
  const { knex, t, dialect } = db;
  const now = dialect.toDbTime(new Date());
  const open = (q: Knex.QueryBuilder) =>
    q
      .where('status', 'active')
      .orWhere((w) => w.where('status', 'locked').where('locked_until', '<=', now as Knex.Value));
  await knex(t.users).where('id', id).where(open).increment('failed_attempts', 1);
  const locked = await knex(t.users)
    .where('id', id)
    .where(open)
    .where('failed_attempts', '>=', maxAttempts)
    .update({ status: 'locked', locked_until: dialect.toDbTime(lockUntil), failed_attempts: 0, updated_at: now });
  return locked > 0;
}

/** A successful login resets the failure count (only failures count, and only consecutively). */
export async function recordLoginSuccess(db: Database, id: string, locale: string): Promise<void> {
  const { knex, t, dialect } = db;
  await knex(t.users)
    .where('id', id)
    .update({ failed_attempts: 0, last_login_at: dialect.toDbTime(new Date()), locale });
}

/** Ends a lock: by an administrator, or lazily once `locked_until` has passed. */
export async function unlockUser(db: Database, id: string): Promise<void> {
  const { knex, t, dialect } = db;
  await knex(t.users)
    .where('id', id)
    .where('status', 'locked')
    .update({ status: 'active', locked_until: null, failed_attempts: 0, updated_at: dialect.toDbTime(new Date()) });
}

export async function countUsers(db: Database): Promise<number> {
  return db.models.User.query().withDeleted().resultSize();
}
