import { randomBytes } from 'node:crypto';
import { USERNAME } from '../users/schemas.ts';
import type { Profile } from './field-mapping.ts';

const MAX = 32;

/** Letters and digits with `_ . -` inside (docs/decisions.md "OAuth login", `auto_create_user`), accents dropped; undefined when under 3 characters remain. */
function sanitize(raw: string): string | undefined {
  const name = raw
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^A-Za-z0-9_.-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, MAX)
    .replace(/[^A-Za-z0-9]+$/, '');
  return USERNAME.test(name) ? name : undefined;
}

/** The name a new user would like: the provider's username, else the email's local part, else one from the account id. */
export function preferredUsername(profile: Profile): string {
  const candidates = [profile.username, profile.email?.split('@')[0], profile.subject && `user-${profile.subject}`];
  for (const candidate of candidates) {
    const name = candidate && sanitize(candidate);
    if (name) return name;
  }
  return 'user';
}

/** `base` with a suffix, shortened to stay within the length limit: `alice-2`. */
function withSuffix(base: string, suffix: string): string {
  return `${base.slice(0, MAX - suffix.length).replace(/[^A-Za-z0-9]+$/, '')}${suffix}`;
}

/** The names tried in turn while the preferred one is taken: alice, alice-2 … alice-20, then a random suffix. */
export function* usernameCandidates(base: string): Generator<string> {
  yield base;
  for (let n = 2; n <= 20; n++) yield withSuffix(base, `-${n}`);
  yield withSuffix(base, `-${randomBytes(4).toString('hex')}`);
}
