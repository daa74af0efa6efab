import type { Database } from '../../db/database.ts';
import { findUsersWithRoleNames, listLiveUserKeys, type UserWithRoles } from '../../db/repositories/users.ts';
import type { FeedCache } from '../common/feed-cache.ts';

/** Never part of a username or an email: it parts the keys, so a term cannot match across two of them. */
const SEPARATOR = '\u0000';

/** The length of the pieces the index keeps; a shorter term is searched by a scan. */
const PIECE = 3;

/**
 * Every live user's lower-cased username and email, newest user first: `parts[i]` holds user `ids[i]`'s two
 * keys parted by SEPARATOR, `text` all parts in one string with `starts[i]` where part `i` begins, and `pieces`
 * maps each run of PIECE characters of any key to the users holding it (ascending indexes into `ids`).
 */
export interface UserKeys {
  ids: string[];
  parts: string[];
  starts: number[];
  text: string;
  pieces: Map<string, number[]>;
}

export async function loadUserKeys(db: Database): Promise<UserKeys> {
  return userKeysOf(await listLiveUserKeys(db));
}

/** The keys of `rows` (newest first), indexed. */
export function userKeysOf(rows: { id: string; username_key: string; email_key: string }[]): UserKeys {
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
  return { ids: rows.map((r) => r.id), parts, starts, text: parts.join(''), pieces };
}

/** The index into `ids` of the user whose keys hold text position `at`. */
function userAt(keys: UserKeys, at: number): number {
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
function scanned(keys: UserKeys, needle: string): number[] {
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
function indexed(keys: UserKeys, needle: string): number[] {
  let candidates: number[] | undefined;
  for (let at = 0; at + PIECE <= needle.length; at++) {
    const users = keys.pieces.get(needle.slice(at, at + PIECE));
    if (!users) return [];
    if (!candidates || users.length < candidates.length) candidates = users;
  }
  return candidates!.filter((user) => keys.parts[user]!.includes(needle));
}

/** The ids of the users whose username or email contains `term` (case-insensitively), newest first. */
export function matchingUsers(keys: UserKeys, term: string): string[] {
  const needle = term.toLowerCase();
  if (needle.includes(SEPARATOR)) return [];
  const users = needle.length < PIECE ? scanned(keys, needle) : indexed(keys, needle);
  return users.map((user) => keys.ids[user]!);
}

/**
 * A page of the users a search finds. A substring match cannot use an index, and the database scanned every
 * user twice for it (count and page), milliseconds per search. The keys of the live users are kept instead,
 * in `keys` (dropped on any change to users on any node, like the pages), with an index of their pieces, and
 * searched in memory: only the page's users are read. Keys are lower-cased as stored (`username_key`,
 * `email_key`), with JavaScript's rules.
 */
export async function searchUsers(
  db: Database,
  keys: FeedCache<UserKeys>,
  q: { offset: number; limit: number; search: string },
): Promise<{ rows: UserWithRoles[]; total: number }> {
  const ids = matchingUsers(await keys.get('live', () => loadUserKeys(db)), q.search);
  return { rows: await findUsersWithRoleNames(db, ids.slice(q.offset, q.offset + q.limit)), total: ids.length };
}
