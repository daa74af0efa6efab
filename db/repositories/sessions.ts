import type { Database } from '../database.ts';
import { isoFromDb } from '../dialects/index.ts';

export interface SessionRow {
  id: string;
  user_id: string;
  ip: string;
  user_agent: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  revoked_at: string | null;
}

export async function insertSession(db: Database, s: Omit<SessionRow, 'revoked_at'>): Promise<void> {
  const time = db.dialect.toDbTime;
  await db.knex(db.t.sessions).insert({
    ...s,
    created_at: time(new Date(s.created_at)),
    last_seen_at: time(new Date(s.last_seen_at)),
    expires_at: time(new Date(s.expires_at)),
  });
}

export async function findSession(db: Database, id: string): Promise<SessionRow | undefined> {
  const row = (await db.knex(db.t.sessions).where('id', id).first()) as Record<string, unknown> | undefined;
  if (!row) return undefined;
  return {
    ...(row as unknown as SessionRow),
    created_at: isoFromDb(row.created_at)!,
    last_seen_at: isoFromDb(row.last_seen_at)!,
    expires_at: isoFromDb(row.expires_at)!,
    revoked_at: isoFromDb(row.revoked_at),
  };
}

export async function touchSession(db: Database, id: string, at: Date, expiresAt?: Date): Promise<void> {
  const row: Record<string, unknown> = { last_seen_at: db.dialect.toDbTime(at) };
  if (expiresAt) row.expires_at = db.dialect.toDbTime(expiresAt);
  await db.knex(db.t.sessions).where('id', id).update(row);
}

export async function revokeSession(db: Database, id: string): Promise<void> {
  await db
    .knex(db.t.sessions)
    .where('id', id)
    .whereNull('revoked_at')
    .update({ revoked_at: db.dialect.toDbTime(new Date()) });
}

export async function revokeUserSessions(db: Database, userId: string): Promise<void> {
  await db
    .knex(db.t.sessions)
    .where('user_id', userId)
    .whereNull('revoked_at')
    .update({ revoked_at: db.dialect.toDbTime(new Date()) });
}

/** Deletes sessions that expired or were revoked before `before` (the cleanup schedule calls this). */
export async function deleteEndedSessions(db: Database, before: Date): Promise<number> {
  const t = db.dialect.toDbTime(before) as string;
  return db.knex(db.t.sessions).where('expires_at', '<', t).orWhere('revoked_at', '<', t).del();
}
