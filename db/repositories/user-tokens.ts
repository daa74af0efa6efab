import type { Knex } from 'knex';
import type { Database } from '../database.ts';
import { isoFromDb } from '../dialects/index.ts';

export type TokenPurpose = 'password_reset' | 'mfa';

export interface UserTokenRow {
  id: string;
  user_id: string;
  purpose: TokenPurpose;
  code_hash: string | null;
  attempts: number;
  expires_at: string;
  used_at: string | null;
}

export async function insertUserToken(
  db: Database,
  row: { id: string; user_id: string; purpose: TokenPurpose; token_hash: string; code_hash?: string; expires_at: Date },
): Promise<void> {
  const time = db.dialect.toDbTime;
  await db.knex(db.t.userTokens).insert({
    ...row,
    code_hash: row.code_hash ?? null,
    created_at: time(new Date()),
    expires_at: time(row.expires_at),
  });
}

export async function findUserToken(
  db: Database,
  purpose: TokenPurpose,
  tokenHash: string,
): Promise<UserTokenRow | undefined> {
  const row = (await db.knex(db.t.userTokens).where({ purpose, token_hash: tokenHash }).first()) as
    Record<string, unknown> | undefined;
  if (!row) return undefined;
  return {
    ...(row as unknown as UserTokenRow),
    attempts: Number(row.attempts),
    expires_at: isoFromDb(row.expires_at)!,
    used_at: isoFromDb(row.used_at),
  };
}

/** How many tokens of this purpose the user was issued since `since`, used or not. */
export async function countUserTokensSince(
  db: Database,
  userId: string,
  purpose: TokenPurpose,
  since: Date,
): Promise<number> {
  const [row] = (await db
    .knex(db.t.userTokens)
    .where({ user_id: userId, purpose })
    .where('created_at', '>=', db.dialect.toDbTime(since) as Knex.Value)
    .count({ n: '*' })) as { n: number | string }[];
  return Number(row?.n ?? 0);
}

/** Marks the token used; true for the one caller that wins when several race. */
export async function consumeUserToken(db: Database, id: string): Promise<boolean> {
  return (
    (await db
      .knex(db.t.userTokens)
      .where({ id })
      .whereNull('used_at')
      .update({ used_at: db.dialect.toDbTime(new Date()) })) === 1
  );
}

/** Counts one attempt when fewer than `max` were made; false once the attempts are used up. */
export async function countTokenAttempt(db: Database, id: string, max: number): Promise<boolean> {
  return (await db.knex(db.t.userTokens).where({ id }).where('attempts', '<', max).increment('attempts', 1)) === 1;
}

/** Ends every unused token of this purpose for the user (a new reset link replaces older ones). */
export async function revokeUserTokens(db: Database, userId: string, purpose: TokenPurpose): Promise<void> {
  await db
    .knex(db.t.userTokens)
    .where({ user_id: userId, purpose })
    .whereNull('used_at')
    .update({ used_at: db.dialect.toDbTime(new Date()) });
}

/** The credential cleaner of the sessions cleanup (engine/cleanup.ts). */
export async function deleteExpiredUserTokens(db: Database, now: Date): Promise<number> {
  return db
    .knex(db.t.userTokens)
    .where('expires_at', '<', db.dialect.toDbTime(now) as Knex.Value)
    .del();
}
