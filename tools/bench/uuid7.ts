// node --import tsx tools/bench/uuid7.ts — lib/uuid7.ts beside the uuid package's v7, in one run, printing the ratio.
// Task log lines and task rows each take one id; a busy engine makes thousands a second.
import { v7 } from 'uuid';
import { uuidv7 } from '../../lib/uuid7.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const OPS = Number(process.env.BENCH_OPS ?? 1_000_000);
const makers: Record<string, () => string> = { 'lib/uuid7.ts': () => uuidv7(), uuid: () => v7() };

const best: Record<string, number> = {};
let sink = 0;
for (let round = -1; round < ROUNDS; round++) {
  for (const [name, make] of Object.entries(makers)) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < OPS; i++) sink += make().length;
    const ns = Number(process.hrtime.bigint() - start) / OPS;
    if (round >= 0) best[name] = Math.min(best[name] ?? Infinity, ns);
  }
}
const [ours, theirs] = Object.keys(makers) as [string, string];
console.log(`ns per id, best of ${ROUNDS} rounds of ${OPS.toLocaleString('en')}: ${ours} ${best[ours]!.toFixed(1)}   ${theirs} ${best[theirs]!.toFixed(1)}   ratio ${theirs} / ${ours} ${(best[theirs]! / best[ours]!).toFixed(2)}`);
if (sink === 0) console.log('');
