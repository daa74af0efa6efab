// npm run bench:uuid — lib/uuid7.ts against the uuid package's v7, in one run: the best of
// five rounds of 1,000,000 ids each, and their ratio (docs/performance.md, "Task and log ids").
import { v7 } from 'uuid';
import { uuidv7 } from '../../lib/uuid7.ts';

const IDS = 1_000_000;
const ROUNDS = 5;

/** Nanoseconds per id of `make`, the best of the rounds. */
function best(make: () => string): number {
  let fastest = Infinity;
  for (let round = 0; round < ROUNDS; round++) {
    const start = process.hrtime.bigint();
    let length = 0;
    for (let i = 0; i < IDS; i++) length += make().length;
    if (length !== 36 * IDS) throw new Error('an id is not 36 characters');
    fastest = Math.min(fastest, Number(process.hrtime.bigint() - start) / IDS);
  }
  return fastest;
}

const pooled = best(uuidv7);
const library = best(() => v7());
console.log(`lib/uuid7  ${pooled.toFixed(0)} ns an id`);
console.log(`uuid v7    ${library.toFixed(0)} ns an id`);
console.log(`uuid v7 / lib/uuid7: ${(library / pooled).toFixed(1)}×`);
