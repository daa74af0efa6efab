// node --expose-gc --import tsx tools/bench/lru.ts — lib/lru.ts beside lru-cache, in one run, printing ratios.
// Workloads as the service uses its caches: (1) hot reads, a few keys (a caller's token, user, session) read
// on every request of a full cache of `cache.size` (1000); (2) reads spread evenly over the full cache; (3) the
// rate limiter's churn, a new client address per request in a 100,000-key cache (a miss and a set each time,
// evicting once full), and the same churn in a cache of 1000 (more distinct tokens than `cache.size`);
// (4) heap taken by an empty cache the moment it is built (the limiter's is built at start).
import { LRUCache } from 'lru-cache';
import { LruCache } from '../../lib/lru.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const OPS = Number(process.env.BENCH_OPS ?? 2_000_000);
/** Churn rounds are shorter: each starts from an empty cache and must run well past its bound. */
const CHURN_OPS = Number(process.env.BENCH_CHURN_OPS ?? 300_000);

interface Cache {
  get(key: string): unknown;
  set(key: string, value: object): void;
}

const makers: Record<string, (max: number) => Cache> = {
  'lib/lru.ts': (max) => new LruCache<string, object>(max),
  'lru-cache': (max) => new LRUCache<string, object>({ max }),
};

const keys = Array.from({ length: 200_000 }, (_, i) => `key:${i}`);
const value = { count: 1, resetAt: 0 };

function churn(cache: Cache): void {
  for (let i = 0; i < CHURN_OPS; i++) {
    const key = keys[i % keys.length]!;
    if (cache.get(key) === undefined) cache.set(key, value);
  }
}

const workloads: Record<string, (cache: Cache) => void> = {
  'hot reads (3 keys of 1000)': (cache) => {
    for (let i = 0; i < OPS; i++) cache.get(keys[i % 3]!);
  },
  'spread reads (1000 of 1000)': (cache) => {
    for (let i = 0; i < OPS; i++) cache.get(keys[(i * 7) % 1000]!);
  },
  'miss + set churn (cap 100,000)': churn,
  'miss + set churn (cap 1000)': churn,
};

function build(name: string, workload: string): Cache {
  const max = workload.endsWith('100,000)') ? 100_000 : 1000;
  const cache = makers[name]!(max);
  if (!workload.startsWith('miss')) for (let i = 0; i < 1000; i++) cache.set(keys[i]!, value);
  return cache;
}

/** Nanoseconds per operation, best of ROUNDS (after one warm-up round), alternating the two caches. */
function nsPerOp(): Record<string, Record<string, number>> {
  const best: Record<string, Record<string, number>> = {};
  for (const workload of Object.keys(workloads)) {
    best[workload] = {};
    for (let round = -1; round < ROUNDS; round++) {
      for (const name of Object.keys(makers)) {
        const cache = build(name, workload);
        const start = process.hrtime.bigint();
        workloads[workload]!(cache);
        const ns = Number(process.hrtime.bigint() - start) / (workload.startsWith('miss') ? CHURN_OPS : OPS);
        if (round >= 0) best[workload]![name] = Math.min(best[workload]![name] ?? Infinity, ns);
      }
    }
  }
  return best;
}

function emptyHeap(name: string, max: number): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return NaN;
  const held: Cache[] = [];
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < 10; i++) held.push(makers[name]!(max));
  gc();
  const after = process.memoryUsage().heapUsed;
  return held.length && Math.max(0, after - before) / 10;
}

const [ours, theirs] = Object.keys(makers) as [string, string];
console.log(`ns per operation, best of ${ROUNDS} rounds of ${OPS.toLocaleString('en')} reads or ${CHURN_OPS.toLocaleString('en')} churns (ratio = ${theirs} / ${ours})`);
for (const [workload, r] of Object.entries(nsPerOp())) {
  console.log(`  ${workload.padEnd(32)} ${ours} ${r[ours]!.toFixed(1).padStart(6)}   ${theirs} ${r[theirs]!.toFixed(1).padStart(6)}   ratio ${(r[theirs]! / r[ours]!).toFixed(2)}`);
}
console.log('heap of one empty cache (needs --expose-gc)');
for (const max of [1000, 100_000]) {
  const kb = (name: string) => (emptyHeap(name, max) / 1024).toFixed(1).padStart(8);
  console.log(`  max ${String(max).padEnd(7)} ${ours} ${kb(ours)} KB   ${theirs} ${kb(theirs)} KB`);
}
