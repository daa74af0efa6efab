// node --import tsx tools/bench/rate-limit.ts — server/http/rate-limit.ts's limiter beside @fastify/rate-limit's
// (its `createRateLimit`, which counts without sending headers, so the Unix-seconds `X-RateLimit-Reset` could still
// be ours), in one run, printing ratios. Workloads: one client's requests (one key, counted and checked each time),
// and a new client per request in a 100,000-key store (the limiter under many addresses).
import rateLimit from '@fastify/rate-limit';
import Fastify, { type FastifyRequest } from 'fastify';
import { RateLimiter } from '../../lib/rate-windows.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const OPS = Number(process.env.BENCH_OPS ?? 300_000);
const LIMIT = 1_000_000_000;

const app = Fastify();
await app.register(rateLimit, { global: false });
await app.ready();

type Limit = (key: string) => unknown;
const makers: Record<string, () => Limit> = {
  'rate-limit.ts': () => {
    const limiter = new RateLimiter();
    return (key) => limiter.hit(key, LIMIT).allowed;
  },
  '@fastify/rate-limit': () => {
    // `cache` sizes the limiter's own store (5000 keys when left out); the typed options do not list it.
    const options = {
      max: LIMIT,
      timeWindow: 60_000,
      cache: 100_000,
      keyGenerator: (req: FastifyRequest) => (req as unknown as { key: string }).key,
    };
    const limit = app.createRateLimit(options as Parameters<typeof app.createRateLimit>[0]);
    const req = { ip: '', routeOptions: { config: {} }, key: '' };
    return async (key) => {
      req.key = key;
      const result = await limit(req as unknown as FastifyRequest);
      return result.isAllowed || !result.isExceeded;
    };
  },
};

const keys = Array.from({ length: 200_000 }, (_, i) => `ip:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
const workloads: Record<string, (i: number) => string> = {
  'one client': () => keys[0]!,
  'new client each request': (i) => keys[i % keys.length]!,
};

const best: Record<string, Record<string, number>> = {};
for (const [workload, keyOf] of Object.entries(workloads)) {
  best[workload] = {};
  for (let round = -1; round < ROUNDS; round++) {
    for (const [name, make] of Object.entries(makers)) {
      const limit = make();
      const start = process.hrtime.bigint();
      // Awaited either way, as in the preHandler hook.
      for (let i = 0; i < OPS; i++) await limit(keyOf(i));
      const ns = Number(process.hrtime.bigint() - start) / OPS;
      if (round >= 0) best[workload]![name] = Math.min(best[workload]![name] ?? Infinity, ns);
    }
  }
}
const [ours, theirs] = Object.keys(makers) as [string, string];
console.log(
  `ns per counted request, best of ${ROUNDS} rounds of ${OPS.toLocaleString('en')} (ratio = ${theirs} / ${ours})`,
);
for (const [workload, r] of Object.entries(best)) {
  console.log(
    `  ${workload.padEnd(26)} ${ours} ${r[ours]!.toFixed(0).padStart(6)}   ${theirs} ${r[theirs]!.toFixed(0).padStart(6)}   ratio ${(r[theirs]! / r[ours]!).toFixed(2)}`,
  );
}
await app.close();
