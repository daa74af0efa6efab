import type { Knex } from 'knex';

/**
 * Why a statement or transaction lost to a concurrent one and may simply run again (see Dialect.retryReason):
 * InnoDB deadlocks (1213) and lock-wait timeouts (1205), PostgreSQL deadlocks (40P01) and serialization
 * failures (40001). Under concurrency these are normal events, not faults.
 */
export const RETRY_REASONS = ['deadlock', 'lock_timeout', 'serialization'] as const;
export type RetryReason = (typeof RETRY_REASONS)[number];

export interface RetryPolicy {
  /** Runs in all, the first included. */
  attempts: number;
  /** Before run n + 1 the wait is random in [0, min(maxMs, baseMs · 2^n)) ms (full jitter). */
  baseMs: number;
  maxMs: number;
}

/** Five runs within about half a second: enough for a few contenders to get out of each other's way. */
export const LOST_WORK_RETRY: RetryPolicy = { attempts: 5, baseMs: 10, maxMs: 200 };

export interface RetryHooks {
  /** The retry reason of an error, or undefined when it must not be retried. */
  reasonOf(error: unknown): RetryReason | undefined;
  /** Called before each retry (the metric counts them). */
  onRetry(reason: RetryReason): void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Runs `work`, again after a short jittered backoff when it lost to concurrent work, at most `policy.attempts` times. */
export async function retryLost<T>(
  work: () => PromiseLike<T>,
  hooks: RetryHooks,
  policy: RetryPolicy = LOST_WORK_RETRY,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const reason = attempt < policy.attempts ? hooks.reasonOf(error) : undefined;
      if (!reason) throw error;
      hooks.onRetry(reason);
      await sleep(Math.random() * Math.min(policy.maxMs, policy.baseMs * 2 ** attempt));
    }
  }
}

interface RunnerClient {
  runner(builder: { _connection?: unknown }): { run(): Promise<unknown> };
}

/**
 * Write paths go through knex, so the retry is installed there once (SQLite's claims and bulk inserts run on its
 * connection directly, db/dialects/sqlite-transaction.ts; SQLite loses no work to retry): each statement run outside a
 * transaction, and each `knex.transaction(fn)` as a whole, runs again when it lost. A statement inside a
 * transaction is never retried on its own: the database rolled back the whole transaction (InnoDB on a
 * deadlock, PostgreSQL aborts it), so the transaction's function runs again from its start; it must only
 * write through its transaction, which every transaction of db/ does. Transactions (their knex client is a
 * fresh copy of the client's prototype) and statements bound to an explicit connection are left as they are.
 */
export function retryLostWork(knex: Knex, hooks: RetryHooks, policy: RetryPolicy = LOST_WORK_RETRY): void {
  const client = knex.client as RunnerClient;
  const runner = client.runner.bind(client);
  client.runner = (builder) => {
    const first = runner(builder);
    if (builder._connection) return first;
    const run = first.run.bind(first);
    let ran = false;
    first.run = () => retryLost(() => (ran ? runner(builder).run() : ((ran = true), run())), hooks, policy);
    return first;
  };
  // knex.transaction is a read-only property forwarding to its context's method.
  const context = (knex as unknown as { context: { transaction(container?: unknown, config?: unknown): unknown } })
    .context;
  const transaction = context.transaction.bind(context);
  context.transaction = (container, config) =>
    typeof container === 'function'
      ? retryLost(() => transaction(container, config) as PromiseLike<unknown>, hooks, policy)
      : transaction(container, config);
}
