import { clientNetwork } from '../../lib/client-network.ts';
import { TooManyRequestsError } from '../../lib/errors.ts';
import { KeyedLock } from '../../lib/keyed-lock.ts';
import { KeyedSemaphore } from '../../lib/keyed-semaphore.ts';
import { RateLimiter } from '../../lib/rate-windows.ts';
import type { RequestInfo } from '../common/context.ts';

/**
 * Password hashes one client network may have running at once, and waiting. The libuv pool that runs scrypt has
 * 4 threads: one network holds at most half of them, so a login from elsewhere waits for at most 2 hashes.
 */
export const HASHES_PER_NETWORK = 2;
export const HASHES_WAITING_PER_NETWORK = 8;

/** Who a login names: an account by its id (its username and its email alike), else the name as given. */
export type LoginTarget = { accountId: string } | { name: string };

/**
 * What bounds password guessing, wherever a login comes from (REST under any spelling of its path, tRPC, each
 * call of a tRPC batch): `rate_limit.login_per_minute` per client network and account, one check at a time per
 * account (so concurrent guesses see the lock the one before them set), and a cap on the hashing in flight per
 * client network (docs/decisions.md "Login limits").
 */
export class LoginGuard {
  private readonly windows = new RateLimiter();
  private readonly accounts = new KeyedLock();
  private readonly hashing = new KeyedSemaphore(HASHES_PER_NETWORK, HASHES_WAITING_PER_NETWORK);

  /** `perMinute` undefined: rate limits are off (`rate_limit.enabled: false`); the other bounds still hold. */
  constructor(private readonly perMinute: number | undefined) {}

  /** Counts a login against its target; over the limit → 429 E4291, before any password is looked at. */
  count(req: RequestInfo, target: LoginTarget): void {
    if (this.perMinute === undefined) return;
    const who = 'accountId' in target ? `account:${target.accountId}` : `name:${target.name.toLowerCase()}`;
    const hit = this.windows.hit(`${clientNetwork(req.ip)} ${who}`, this.perMinute);
    req.counted?.(hit);
    if (!hit.allowed) throw new TooManyRequestsError('error.too_many_requests');
  }

  /** Runs the password check of one account after the checks of that account before it (on this node). */
  inTurn<T>(accountId: string, check: () => Promise<T>): Promise<T> {
    return this.accounts.run(accountId, check);
  }

  /** Runs a hash in the client network's turn; a network with too many in flight → 429 E4291. */
  hash<T>(req: RequestInfo, work: () => Promise<T>): Promise<T> {
    return this.hashing.run(clientNetwork(req.ip), work, () => new TooManyRequestsError('auth.too_many_logins'));
  }
}
