import { z } from 'zod';
import type { UserRow } from '../../db/models.ts';
import { searchInput, timestamp, uuidString } from '../common/schemas.ts';

export const USERNAME = /^[A-Za-z0-9](?:[A-Za-z0-9_.-]{1,30})[A-Za-z0-9]$/;

export const userStatus = z.enum(['active', 'disabled', 'locked']);

export const userSchema = z
  .object({
    id: uuidString,
    username: z.string(),
    email: z.string(),
    full_name: z.string(),
    avatar: z.string(),
    status: userStatus,
    mfa_enabled: z.boolean(),
    roles: z.array(z.object({ id: uuidString, name: z.string() })),
    last_login_at: timestamp.nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'User' });
export type UserJson = z.infer<typeof userSchema>;

export const listUsersInput = searchInput;

export const createUserInput = z.object({
  username: z.string().regex(USERNAME, 'validation.username'),
  email: z.email().max(255),
  // Length beyond the fixed bounds is checked against the password_min_length setting in the service.
  password: z.string().min(1).max(128),
  full_name: z.string().max(255).optional(),
  avatar: z.string().max(1024).optional(),
  role_ids: z.array(z.uuid()).max(100).optional(),
  mfa_enabled: z.boolean().optional(),
});

export const updateUserInput = z.object({
  id: z.uuid(),
  email: z.email().max(255).optional(),
  status: z.enum(['active', 'disabled']).optional(),
  full_name: z.string().max(255).optional(),
  avatar: z.string().max(1024).optional(),
  role_ids: z.array(z.uuid()).max(100).optional(),
  mfa_enabled: z.boolean().optional(),
});

export const setPasswordInput = z.object({ id: z.uuid(), password: z.string().min(1).max(128) });

type LockFields = { status: UserJson['status']; locked_until: string | null };

/** When the account's lock ends (ms since the epoch); Infinity when it is not locked for a time. */
export function lockEndsAt(u: LockFields): number {
  return u.status === 'locked' && u.locked_until !== null ? Date.parse(u.locked_until) : Infinity;
}

/** A locked account whose lock time has passed shows (and acts) as active. */
export function effectiveStatus(u: LockFields, now = Date.now()): UserJson['status'] {
  return lockEndsAt(u) <= now ? 'active' : u.status;
}

/** What a user is shown from: their row and their roles' id and name. */
type ShownUser = LockFields &
  Pick<
    UserRow,
    'id' | 'username' | 'email' | 'full_name' | 'avatar' | 'mfa_enabled' | 'last_login_at' | 'created_at' | 'updated_at'
  > & {
    roles?: { id: string; name: string }[];
  };

export function toUserJson(u: ShownUser): UserJson {
  return {
    id: u.id,
    username: u.username,
    email: u.email,
    full_name: u.full_name,
    avatar: u.avatar,
    status: effectiveStatus(u),
    mfa_enabled: u.mfa_enabled,
    roles: (u.roles ?? []).map((r) => ({ id: r.id, name: r.name })),
    last_login_at: u.last_login_at,
    created_at: u.created_at,
    updated_at: u.updated_at,
  };
}
