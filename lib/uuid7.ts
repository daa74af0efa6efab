import { randomFillSync } from 'node:crypto';

// Random bytes are drawn from the system 4 KB at a time: asking it for 16 bytes per id (as the uuid package's v7
// does) cost more than all the rest of making one, and a task's insert makes one (docs/performance.md "Task and
// log ids").
const pool = Buffer.allocUnsafeSlow(4096);
let drawn = pool.length;

/** Where `n` fresh random bytes start in `pool`. */
function randomAt(n: number): number {
  if (drawn + n > pool.length) {
    randomFillSync(pool);
    drawn = 0;
  }
  drawn += n;
  return drawn - n;
}

const hex = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

let lastMs = -Infinity;
let counter = 0;

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix time in ms, then a 32-bit counter, then 42 random bits. The counter starts
 * at a random 31-bit value in each new millisecond and counts up within it (RFC 9562 §6.2, method 1), moving on to
 * the next millisecond if it runs out, so the ids one process makes sort in the order it made them, even in a
 * burst or when the clock steps back.
 */
export function uuidv7(): string {
  const now = Date.now();
  const at = randomAt(10);
  if (now > lastMs) {
    lastMs = now;
    counter = pool.readUInt32BE(at) >>> 1;
  } else if (counter === 0xffffffff) {
    lastMs++;
    counter = pool.readUInt32BE(at) >>> 1;
  } else counter++;
  const ms = lastMs;
  const c = counter;
  return (
    hex[Math.floor(ms / 0x10000000000) & 0xff]! +
    hex[Math.floor(ms / 0x100000000) & 0xff]! +
    hex[(ms >>> 24) & 0xff]! +
    hex[(ms >>> 16) & 0xff]! +
    '-' +
    hex[(ms >>> 8) & 0xff]! +
    hex[ms & 0xff]! +
    '-' +
    hex[0x70 | (c >>> 28)]! +
    hex[(c >>> 20) & 0xff]! +
    '-' +
    hex[0x80 | ((c >>> 14) & 0x3f)]! +
    hex[(c >>> 6) & 0xff]! +
    '-' +
    hex[((c << 2) & 0xff) | (pool[at + 4]! & 0x03)]! +
    hex[pool[at + 5]!]! +
    hex[pool[at + 6]!]! +
    hex[pool[at + 7]!]! +
    hex[pool[at + 8]!]! +
    hex[pool[at + 9]!]!
  );
}
