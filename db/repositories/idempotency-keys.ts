import type { Knex } from 'knex';
import { countOf } from '../counts.ts';
import type { Database } from '../database.ts';
import { isoFromDb } from '../dialects/index.ts';

/** A key's row: claimed by a request still running, or holding the answer it gave. */
export interface StoredKey {
  requestHash: string;
  claimId: string;
  state: 'running' | 'done';
  /** The stored answer (JSON) once done. */
  response: string | null;
  expiresAt: number;
}

export interface KeyClaim {
  userId: string;
  keyHash: string;
  requestHash: string;
  claimId: string;
  leaseMs: number;
  /** At most this many rows of the user created in the last 24 hours: a new key beyond is refused (`full`). */
  perDay?: number;
}

export type ClaimResult = { claimed: true } | { claimed: false; stored: StoredKey } | { claimed: false; full: true };

const DAY_MS = 86_400_000;

const where = (userId: string, keyHash: string) => ({ user_id: userId, key_hash: keyHash });

export async function readIdempotencyKey(
  db: Database,
  userId: string,
  keyHash: string,
): Promise<StoredKey | undefined> {
  const row = (await db
    .knex(db.t.idempotencyKeys)
    .where(where(userId, keyHash))
    .first('request_hash', 'claim_id', 'state', 'response', 'expires_at')) as
    | {
        request_hash: string;
        claim_id: string;
        state: StoredKey['state'];
        response: string | null;
        expires_at: unknown;
      }
    | undefined;
  if (!row) return undefined;
  return {
    requestHash: row.request_hash,
    claimId: row.claim_id,
    state: row.state,
    response: row.response,
    expiresAt: Date.parse(isoFromDb(row.expires_at)!),
  };
}

function claimRow(db: Database, c: KeyClaim): Record<string, unknown> {
  const now = Date.now();
  return {
    request_hash: c.requestHash,
    claim_id: c.claimId,
    state: 'running',
    response: null,
    created_at: db.dialect.toDbTime(new Date(now)),
    expires_at: db.dialect.toDbTime(new Date(now + c.leaseMs)),
  };
}

/** Rows of `userId` created (or taken over) since `since`, those the clean-up has not deleted yet included. */
function countKeysSince(db: Database, userId: string, since: Date): Promise<number> {
  const rows = db
    .knex(db.t.idempotencyKeys)
    .where('user_id', userId)
    .where('created_at', '>=', db.dialect.toDbTime(since) as Knex.Value);
  return countOf(db, rows);
}

/**
 * Claims the key for a request about to run, or answers the row that holds it. The database decides between
 * nodes: the unique key refuses a second insert, and a lapsed row (a claim whose request died, an answer past
 * its 24 hours) is taken over by an UPDATE naming the claim it replaces, which one node wins. On ClickHouse,
 * with no unique keys, this process's lock is what serialises (one process, docs/decisions.md). The lock is the
 * user's, not the key's, so that the count of `perDay` and the insert it allows are one step on this node.
 */
export function claimIdempotencyKey(db: Database, c: KeyClaim): Promise<ClaimResult> {
  const table = db.t.idempotencyKeys;
  return db.withLock(`${table}:${c.userId}`, async () => {
    // A row deleted by the clean-up between the steps sends the loop round again; it cannot vanish twice
    // without being written in between, which the next round sees.
    for (;;) {
      const stored = await readIdempotencyKey(db, c.userId, c.keyHash);
      if (!stored) {
        if (c.perDay && (await countKeysSince(db, c.userId, new Date(Date.now() - DAY_MS))) >= c.perDay)
          return { claimed: false, full: true };
        try {
          await db.knex(table).insert({ ...where(c.userId, c.keyHash), ...claimRow(db, c) });
          return { claimed: true };
        } catch (error) {
          if (!db.dialect.isUniqueViolation(error)) throw error;
          continue;
        }
      }
      if (stored.expiresAt > Date.now()) return { claimed: false, stored };
      const taken = await db
        .knex(table)
        .where({ ...where(c.userId, c.keyHash), claim_id: stored.claimId })
        .update(claimRow(db, c));
      if (taken === 1) return { claimed: true };
    }
  });
}

/** Stores the answer of the claim's request for `ttlMs`; nothing when the claim was lost meanwhile. */
export async function finishIdempotencyKey(
  db: Database,
  userId: string,
  keyHash: string,
  claimId: string,
  response: string,
  ttlMs: number,
): Promise<void> {
  await db
    .knex(db.t.idempotencyKeys)
    .where({ ...where(userId, keyHash), claim_id: claimId })
    .update({ state: 'done', response, expires_at: db.dialect.toDbTime(new Date(Date.now() + ttlMs)) });
}

/** Gives the key up, so that a repeat runs the request again (an answer not worth keeping). */
export async function releaseIdempotencyKey(
  db: Database,
  userId: string,
  keyHash: string,
  claimId: string,
): Promise<void> {
  await db
    .knex(db.t.idempotencyKeys)
    .where({ ...where(userId, keyHash), claim_id: claimId })
    .del();
}

/** A credential cleaner of the sessions cleanup (engine/cleanup.ts): answers past their 24 hours, lapsed claims. */
export async function deleteExpiredIdempotencyKeys(db: Database, now: Date): Promise<number> {
  return db
    .knex(db.t.idempotencyKeys)
    .where('expires_at', '<', db.dialect.toDbTime(now) as Knex.Value)
    .del();
}
