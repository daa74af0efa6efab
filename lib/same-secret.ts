import { createHash, timingSafeEqual } from 'node:crypto';

/** Compares two secrets in constant time (through digests, so their lengths do not show either). */
export function sameSecret(given: string, expected: string): boolean {
  const digest = (v: string) => createHash('sha256').update(v).digest();
  return timingSafeEqual(digest(given), digest(expected));
}
