import { createHash, randomUUID } from 'node:crypto';
import { middlewareMarker } from '@trpc/server/unstable-core-do-not-import';
import type { Database } from '../../db/database.ts';
import {
  claimIdempotencyKey,
  finishIdempotencyKey,
  releaseIdempotencyKey,
  type KeyClaim,
  type StoredKey,
} from '../../db/repositories/idempotency-keys.ts';
import { AppError, fieldError, TooManyRequestsError } from '../../lib/errors.ts';
import type { MaybePromise } from '../../lib/maybe-async.ts';
import type { Caller, Context, IdempotencyRequest, RequestInfo } from './context.ts';
import { toErrorBody } from './error-body.ts';
import type { Meta } from './trpc.ts';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** How long an answer is kept for repeats. */
export const ANSWER_TTL_MS = 86_400_000;
/**
 * How long a claim holds its key without an answer: past it, the request is taken for dead (its node stopped)
 * and a repeat runs it again. Far longer than any request's work here (long work runs as tasks).
 */
export const CLAIM_LEASE_MS = 5 * 60_000;
const POLL_MS = 100;

/** Letters, digits and the marks UUIDs, ULIDs and base64 keys use; nothing a header or a log line needs escaped. */
const KEY_FORMAT = /^[A-Za-z0-9\-_.:~+/=]{1,255}$/;

/** The `Idempotency-Key` rows, as the middleware claims, finishes and releases them. */
export class IdempotencyKeys {
  constructor(
    private readonly db: Database,
    /** `quota.idempotency_keys_per_day`: new keys one user may claim in 24 hours (0: no limit). */
    private readonly perDay = 0,
  ) {}

  /** Claims the key, or answers the row holding it; a new key past the user's daily quota → 429. */
  async claim(claim: KeyClaim) {
    const result = await claimIdempotencyKey(this.db, { ...claim, perDay: this.perDay });
    if ('full' in result) throw new TooManyRequestsError('idempotency.quota', { max: this.perDay });
    return result;
  }

  finish(userId: string, keyHash: string, claimId: string, response: string, ttlMs: number) {
    return finishIdempotencyKey(this.db, userId, keyHash, claimId, response, ttlMs);
  }

  release(userId: string, keyHash: string, claimId: string) {
    return releaseIdempotencyKey(this.db, userId, keyHash, claimId);
  }
}

/**
 * Whether a procedure honours `Idempotency-Key`: authenticated ones outside `/auth/*`. A stored login, reset or
 * OAuth answer would hand a token out again past a lockout or MFA, and logout and refresh are their own repeat.
 */
export function acceptsIdempotencyKey(meta: Meta | undefined): boolean {
  return !meta?.public && !(meta?.openapi?.path ?? '').startsWith('/auth/');
}

type Outcome = { ok: true; data: unknown } | { ok: false; error: unknown };

/** What is kept of an answer: the data of a success, or the error as it was answered. */
type StoredAnswer = { ok: true; data?: unknown } | { ok: false; status: number; code: string; err: string };

/** A kept error answered again as it was first answered (its text in the first request's language). */
class ReplayedError extends AppError {
  constructor(
    readonly status: number,
    readonly code: string,
    private readonly text: string,
  ) {
    super('idempotency.replayed', { code });
  }
  override localized(): string {
    return this.text;
  }
}

/**
 * Errors kept for repeats: the request's own fault, which a repeat would meet again. Not 401, 403 or 429, which
 * depend on the session, permissions or rate window of the moment, nor any 5xx: a repeat runs again.
 */
const keptError = (status: number) =>
  status >= 400 && status < 500 && status !== 401 && status !== 403 && status !== 429;

function answerToKeep(outcome: Outcome, locale: string): StoredAnswer | undefined {
  if (outcome.ok) return { ok: true, data: outcome.data };
  const body = toErrorBody(outcome.error, locale);
  return keptError(body.status) ? { ok: false, status: body.status, code: body.code, err: body.err } : undefined;
}

/**
 * JSON with object keys sorted, so the same input hashes alike whatever order its keys were sent in. The input
 * has passed the input guard (nesting ≤ 64) before any authenticated middleware sees it.
 */
function canonical(value: unknown): string {
  const sorted = (_key: string, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, (v as Record<string, unknown>)[k]]),
        )
      : v;
  return JSON.stringify(value, sorted) ?? 'null';
}

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** What a repeat must match: the procedure, the organization it acts in and the input, whatever its key order. */
export function requestHashOf(path: string, orgId: string | undefined, input: unknown): string {
  return sha256(`${path}\n${orgId ?? ''}\n${canonical(input)}`);
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function replay<R>(stored: StoredKey, ctx: Context): R {
  const answer = JSON.parse(stored.response!) as StoredAnswer;
  if (!answer.ok) throw new ReplayedError(answer.status, answer.code, answer.err);
  return { marker: middlewareMarker, ok: true, data: answer.data, ctx } as R;
}

export interface KeyedCall {
  ctx: Context;
  type: string;
  /** The procedure's path (`users.create`): REST and /trpc name a procedure alike. */
  path: string;
  meta: Meta | undefined;
  getRawInput: () => MaybePromise<unknown>;
}

/**
 * Runs the request once per (user, key): the first claims the key in the database, runs, and stores its answer
 * for 24 hours; a repeat with the same procedure, organization and input answers that, marked as a replay,
 * without running; another request with the key → 400. A repeat while the first runs waits up to `waitMs`.
 */
async function runOnce<R>(
  call: KeyedCall,
  caller: Caller,
  req: RequestInfo,
  info: IdempotencyRequest,
  run: () => R,
): Promise<R> {
  if (!KEY_FORMAT.test(info.key)) throw fieldError(IDEMPOTENCY_HEADER, 'idempotency.format');
  if (info.calls > 1) throw fieldError(IDEMPOTENCY_HEADER, 'idempotency.batch');
  const { idempotencyKeys: keys, logger } = call.ctx.services;
  const keyHash = sha256(info.key);
  const requestHash = requestHashOf(call.path, req.orgId, await call.getRawInput());
  const claimId = randomUUID();
  const deadline = Date.now() + info.waitMs;
  for (;;) {
    const claim = await keys.claim({
      userId: caller.id,
      keyHash,
      requestHash,
      claimId,
      leaseMs: CLAIM_LEASE_MS,
    });
    if (claim.claimed) break;
    if (claim.stored.requestHash !== requestHash) throw fieldError(IDEMPOTENCY_HEADER, 'idempotency.other_request');
    if (claim.stored.state === 'done') {
      info.replayed();
      return replay(claim.stored, call.ctx);
    }
    if (Date.now() >= deadline) throw fieldError(IDEMPOTENCY_HEADER, 'idempotency.in_progress');
    await sleep(POLL_MS);
  }
  let outcome: Outcome;
  try {
    outcome = (await run()) as Outcome;
  } catch (error) {
    await keys
      .release(caller.id, keyHash, claimId)
      .catch((cause: unknown) => logger.warn({ err: cause }, 'idempotency key not released'));
    throw error;
  }
  // The work is done whatever happens to its record: a failure to keep it is logged, and the claim lapses.
  try {
    const kept = answerToKeep(outcome, req.locale);
    if (kept) await keys.finish(caller.id, keyHash, claimId, JSON.stringify(kept), ANSWER_TTL_MS);
    else await keys.release(caller.id, keyHash, claimId);
  } catch (error) {
    logger.warn({ err: error }, 'idempotency key answer not stored');
  }
  return outcome as R;
}

/**
 * `run` (the rest of an authenticated procedure's chain), once per `Idempotency-Key` where the key applies: a
 * mutation outside `/auth/*` whose request carries one. Anything else runs as it is, without a promise.
 */
export function onceByKey<R>(call: KeyedCall, auth: { caller: Caller; req: RequestInfo }, run: () => R): R {
  const info = auth.req.idempotency;
  if (info === undefined || call.type !== 'mutation' || !acceptsIdempotencyKey(call.meta)) return run();
  return runOnce(call, auth.caller, auth.req, info, run) as R;
}
