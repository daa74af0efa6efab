import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IdempotencyRequest } from '../../routers/common/context.ts';
import { REPLAYED_HEADER } from '../../routers/common/idempotency.ts';

/** How long a repeat waits for the first request with its key when `server.write_timeout` is off. */
const WAIT_WITHOUT_TIMEOUT_MS = 10_000;

/**
 * The `Idempotency-Key` of a POST (REST creates and actions, every /trpc mutation), for the procedure to
 * check; other methods ignore it. A repeat waits for the first request at most half the write timeout, so
 * that it answers its own "still running" rather than the timeout's 503.
 */
export function idempotencyOf(
  request: FastifyRequest,
  reply: FastifyReply,
  calls: number,
  writeTimeoutMs: number,
): IdempotencyRequest | undefined {
  const key = request.headers['idempotency-key'];
  if (request.method !== 'POST' || key === undefined) return undefined;
  return {
    key: Array.isArray(key) ? key.join(', ') : key,
    calls,
    waitMs: writeTimeoutMs > 0 ? writeTimeoutMs / 2 : WAIT_WITHOUT_TIMEOUT_MS,
    replayed: () => void reply.header(REPLAYED_HEADER, 'true'),
  };
}
