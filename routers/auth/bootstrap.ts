import { randomBytes, randomUUID } from 'node:crypto';
import type { Database } from '../../db/database.ts';
import { findRoleByName, insertRole, roleLockKey } from '../../db/repositories/roles.ts';
import { writeUnique } from '../../db/unique-write.ts';
import { revokeUserSessions } from '../../db/repositories/sessions.ts';
import {
  countUsers,
  findUserByLogin,
  identityLockKeys,
  insertUser,
  setPasswordHash,
  unlockUser,
} from '../../db/repositories/users.ts';
import { readAllSettings } from '../../db/repositories/settings.ts';
import { SettingsRegistry } from '../../lib/settings-registry.ts';
import type { PermissionCatalogue } from '../permissions/service.ts';
import { declareCoreSettings } from '../settings/definitions.ts';
import { ADMIN_ROLE } from './identity.ts';
import type { PasswordHasher } from './password-hash.ts';
import { checkPasswordLength } from './password-policy.ts';

const SYSTEM_ROLES = [
  { name: ADMIN_ROLE, description: 'Administrator: every permission' },
  { name: 'operator', description: 'Operator: everything except deletes, settings changes and organizations' },
  { name: 'viewer', description: 'Viewer: read-only access' },
] as const;

/** Creates the system roles that do not exist yet. A role lost to a concurrent node's insert is fine. */
export async function ensureSystemRoles(db: Database, catalogue: PermissionCatalogue): Promise<void> {
  for (const role of SYSTEM_ROLES) {
    await writeUnique(db, {
      keys: roleLockKey(role.name, null),
      write: async () => {
        if (await findRoleByName(db, role.name)) return;
        const permissions =
          role.name === ADMIN_ROLE ? catalogue.list().map((p) => p.code) : catalogue.defaultsFor(role.name);
        await insertRole(db, randomUUID(), { name: role.name, description: role.description, permissions }, true);
      },
      taken: async () => {},
    });
  }
}

export interface AdminBootstrap {
  username: string;
  email: string;
  password?: string;
}

/**
 * On an empty user table, creates the administrator. Without a configured password a random one is made
 * and returned so the caller can show it once; only the node whose insert wins returns it.
 */
export async function ensureAdminUser(
  db: Database,
  hasher: PasswordHasher,
  admin: AdminBootstrap,
): Promise<{ generatedPassword?: string } | undefined> {
  return writeUnique(db, {
    keys: identityLockKeys(admin.username, admin.email),
    write: async () => {
      if ((await countUsers(db)) > 0) return undefined;
      const role = await findRoleByName(db, ADMIN_ROLE);
      if (!role) throw new Error('admin role missing');
      const password = admin.password ?? randomBytes(12).toString('base64url');
      await insertUser(
        db,
        {
          id: randomUUID(),
          username: admin.username,
          email: admin.email,
          password_hash: await hasher.hash(password),
          full_name: 'Administrator',
          avatar: '',
          status: 'active',
          mfa_enabled: false,
          locale: 'en',
          ...(admin.password ? {} : { password_changed_at: null }),
        },
        [role.id],
      );
      return { generatedPassword: admin.password ? undefined : password };
    },
    // Another node's administrator won: only that node shows a generated password.
    taken: async () => undefined,
  });
}

/** `password_min_length` as the running service reads it: stored, else its default. */
async function storedMinLength(db: Database): Promise<number> {
  const registry = new SettingsRegistry();
  declareCoreSettings(registry);
  const key = 'password_min_length';
  return registry.resolve(key, (await readAllSettings(db)).get(key)).value as number;
}

/**
 * Sets a new password for `username` from the command line (a lost administrator password), unlocks the
 * account and ends its sessions. Returns the password, generated when none is given.
 */
export async function resetPasswordByUsername(
  db: Database,
  hasher: PasswordHasher,
  username: string,
  password?: string,
): Promise<string | undefined> {
  // The runtime password policy holds here too; a generated password is long enough for any minimum.
  const min = await storedMinLength(db);
  if (password !== undefined) checkPasswordLength(password, min, '--password');
  const user = await findUserByLogin(db, username);
  if (!user) return undefined;
  const next = password ?? randomBytes(Math.max(12, Math.ceil((min * 3) / 4))).toString('base64url');
  await setPasswordHash(db, user.id, await hasher.hash(next));
  await unlockUser(db, user.id);
  await revokeUserSessions(db, user.id);
  return next;
}
