import type { Knex } from 'knex';
import type { Database } from '../database.ts';
import { isoFromDb } from '../dialects/index.ts';
import { roleNameKey } from './roles.ts';

export interface OAuthStateRow {
  id: string;
  provider: string;
  code_verifier: string;
  expires_at: Date;
}

export interface OAuthLink {
  provider: string;
  subject: string;
  user_id: string;
  email: string;
}

export async function insertOAuthState(db: Database, row: OAuthStateRow): Promise<void> {
  const time = db.dialect.toDbTime;
  await db.knex(db.t.oauthStates).insert({ ...row, created_at: time(new Date()), expires_at: time(row.expires_at) });
}

/**
 * Uses a pending login's state up and answers its PKCE verifier; undefined when it is unknown, expired or
 * already used. The delete decides: of callbacks racing with one state, on any node, one deletes the row.
 */
export async function takeOAuthState(db: Database, id: string, provider: string): Promise<string | undefined> {
  const row = (await db.knex(db.t.oauthStates).where({ id, provider }).first('code_verifier', 'expires_at')) as
    { code_verifier: string; expires_at: unknown } | undefined;
  if (!row) return undefined;
  if ((await db.knex(db.t.oauthStates).where({ id, provider }).del()) !== 1) return undefined;
  return Date.parse(isoFromDb(row.expires_at)!) > Date.now() ? row.code_verifier : undefined;
}

/** The user a provider's account is linked to, if any. */
export async function findLinkedUserId(db: Database, provider: string, subject: string): Promise<string | undefined> {
  const row = (await db.knex(db.t.oauthIdentities).where({ provider, subject }).first('user_id')) as
    { user_id: string } | undefined;
  return row?.user_id;
}

/** Links a provider's account to a user; inside `trx` when the user is created in the same transaction. */
export async function linkOAuthAccount(db: Database, link: OAuthLink, trx?: Knex): Promise<void> {
  await (trx ?? db.knex)(db.t.oauthIdentities).insert({ ...link, created_at: db.dialect.toDbTime(new Date()) });
}

/** The credential cleaner of the sessions cleanup (engine/cleanup.ts): states of logins never finished. */
export async function deleteExpiredOAuthStates(db: Database, now: Date): Promise<number> {
  return db
    .knex(db.t.oauthStates)
    .where('expires_at', '<', db.dialect.toDbTime(now) as Knex.Value)
    .del();
}

/** The ids of the global roles with these names, ignoring case; names that match no role are left out. */
export async function globalRoleIdsNamed(db: Database, names: string[]): Promise<string[]> {
  if (!names.length) return [];
  const rows = (await db
    .knex(db.t.roles)
    .whereIn(
      'name_key',
      names.map((n) => roleNameKey(n, null)),
    )
    .select('id')) as { id: string }[];
  return rows.map((r) => r.id);
}
