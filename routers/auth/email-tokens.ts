import { createHash, randomBytes, randomInt, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Database } from '../../db/database.ts';
import { insertUserToken, type TokenPurpose, type UserTokenRow } from '../../db/repositories/user-tokens.ts';
import type { Recipient } from '../mail/mailer.ts';

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Issues a token (and for MFA a 6-digit code); only their hashes are stored. */
export async function issueEmailToken(
  db: Database,
  userId: string,
  purpose: TokenPurpose,
  ttlMs: number,
  withCode = false,
): Promise<{ token: string; code?: string }> {
  const token = randomBytes(32).toString('base64url');
  const code = withCode ? String(randomInt(0, 1_000_000)).padStart(6, '0') : undefined;
  const tokenHash = sha256(token);
  await insertUserToken(db, {
    id: randomUUID(),
    user_id: userId,
    purpose,
    token_hash: tokenHash,
    code_hash: code === undefined ? undefined : sha256(`${tokenHash}:${code}`),
    expires_at: new Date(Date.now() + ttlMs),
  });
  return { token, code };
}

/** Whether the row can still be used: not consumed and not expired. */
export const isLive = (row: UserTokenRow | undefined): row is UserTokenRow =>
  !!row && row.used_at === null && Date.parse(row.expires_at) > Date.now();

export function codeMatches(row: UserTokenRow, token: string, code: string): boolean {
  if (!row.code_hash) return false;
  return timingSafeEqual(Buffer.from(row.code_hash), Buffer.from(sha256(`${sha256(token)}:${code}`)));
}

export const recipientOf = (user: { email: string; username: string; locale: string }): Recipient => ({
  email: user.email,
  username: user.username,
  locale: user.locale,
});
