import type { Database } from '../../db/database.ts';
import { listLiveUsers, type LiveUser } from '../../db/repositories/users.ts';

/** Never part of a username or an email: it parts the keys, so a term cannot match across two of them. */
const SEPARATOR = '\u0000';

/** The length of the pieces the index keeps; a shorter term is searched by a scan. */
const PIECE = 3;

/** What a search reads of a user: the lower-cased username and email. */
type Keyed = { username_key: string; email_key: string };

/**
 * Users (`rows`, newest first) and their lower-cased username and email: `parts[i]` holds user `rows[i]`'s two
 * keys parted by SEPARATOR, `text` all parts in one string with `starts[i]` where part `i` begins, and `pieces`
 * maps each run of PIECE characters of any key to the users holding it (ascending indexes into `rows`).
 */
export interface UserKeys<R extends Keyed = LiveUser> {
  rows: R[];
  parts: string[];
  starts: number[];
  text: string;
  pieces: Map<string, number[]>;
}

/** Every live user, as lists show them, with the index of their keys. */
export async function loadUserKeys(db: Database): Promise<UserKeys> {
  return userKeysOf(await listLiveUsers(db));
}

/** The keys of `rows` (newest first), indexed. */
export function userKeysOf<R extends Keyed>(rows: R[]): UserKeys<R> {
  const parts = rows.map((r) => `${SEPARATOR}${r.username_key}${SEPARATOR}${r.email_key}`);
  const starts: number[] = [];
  const pieces = new Map<string, number[]>();
  let length = 0;
  parts.forEach((part, user) => {
    starts.push(length);
    length += part.length;
    for (let at = 0; at + PIECE <= part.length; at++) {
      const piece = part.slice(at, at + PIECE);
      if (piece.includes(SEPARATOR)) continue;
      const users = pieces.get(piece);
      if (!users) pieces.set(piece, [user]);
      else if (users[users.length - 1] !== user) users.push(user);
    }
  });
  return { rows, parts, starts, text: parts.join(''), pieces };
}

/** The index into `rows` of the user whose keys hold text position `at`. */
function userAt(keys: UserKeys<Keyed>, at: number): number {
  let low = 0;
  let high = keys.starts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if (keys.starts[mid]! <= at) low = mid;
    else high = mid - 1;
  }
  return low;
}

/** Users holding `needle`, by scanning every key: for terms shorter than a piece. */
function scanned(keys: UserKeys<Keyed>, needle: string): number[] {
  const found: number[] = [];
  for (let at = keys.text.indexOf(needle); at !== -1;) {
    const user = userAt(keys, at);
    found.push(user);
    at = user + 1 < keys.starts.length ? keys.text.indexOf(needle, keys.starts[user + 1]) : -1;
  }
  return found;
}

/**
 * Users holding `needle`, through the index: every user holding it holds each of its pieces, so the users of
 * its rarest piece are the only candidates, and each is checked. A search reads tens of keys, not all of them
 * (a scan of 10,000 users' keys cost more than the rest of the request).
 */
function indexed(keys: UserKeys<Keyed>, needle: string): number[] {
  let candidates: number[] | undefined;
  for (let at = 0; at + PIECE <= needle.length; at++) {
    const users = keys.pieces.get(needle.slice(at, at + PIECE));
    if (!users) return [];
    if (!candidates || users.length < candidates.length) candidates = users;
  }
  return candidates!.filter((user) => keys.parts[user]!.includes(needle));
}

/** Where in `keys.rows` the users are whose username or email contains `term` (case-insensitively), newest first. */
function matching(keys: UserKeys<Keyed>, term: string): number[] {
  const needle = term.toLowerCase();
  if (needle.includes(SEPARATOR)) return [];
  return needle.length < PIECE ? scanned(keys, needle) : indexed(keys, needle);
}

/**
 * A page of the users a search finds, and how many it finds. A substring match cannot use a database index,
 * and the database scanned every user twice for it (count and page), milliseconds per search. The live users
 * are kept instead, as lists show them (dropped on any change to users or roles on any node, like the pages),
 * with an index of the pieces of their keys, and searched in memory: a search reads no database at all.
 * Keys are lower-cased as stored (`username_key`, `email_key`), with JavaScript's rules.
 */
export function searchPage<R extends Keyed>(
  keys: UserKeys<R>,
  q: { offset: number; limit: number; search: string },
): { rows: R[]; total: number } {
  const found = matching(keys, q.search);
  return { rows: found.slice(q.offset, q.offset + q.limit).map((user) => keys.rows[user]!), total: found.length };
}
