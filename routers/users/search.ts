import type { Database } from '../../db/database.ts';
import { findUsersWithRoleNames, listLiveUserKeys, type UserWithRoles } from '../../db/repositories/users.ts';
import type { FeedCache } from '../common/feed-cache.ts';

/** Never part of a username or an email: it parts the keys, so a term cannot match across two of them. */
const SEPARATOR = '\u0000';

/** Every live user's lower-cased username and email in one text, newest user first; `starts[i]` is where user `ids[i]` begins. */
export interface UserKeys {
  ids: string[];
  starts: number[];
  text: string;
}

export async function loadUserKeys(db: Database): Promise<UserKeys> {
  const rows = await listLiveUserKeys(db);
  const starts: number[] = [];
  const parts: string[] = [];
  let length = 0;
  for (const r of rows) {
    starts.push(length);
    const part = `${SEPARATOR}${r.username_key}${SEPARATOR}${r.email_key}`;
    parts.push(part);
    length += part.length;
  }
  return { ids: rows.map((r) => r.id), starts, text: parts.join('') };
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

/** The ids of the users whose username or email contains `term` (case-insensitively), newest first. */
export function matchingUsers(keys: UserKeys, term: string): string[] {
  const needle = term.toLowerCase();
  if (needle.includes(SEPARATOR)) return [];
  const found: string[] = [];
  for (let at = keys.text.indexOf(needle); at !== -1;) {
    const user = userAt(keys, at);
    found.push(keys.ids[user]!);
    at = user + 1 < keys.starts.length ? keys.text.indexOf(needle, keys.starts[user + 1]) : -1;
  }
  return found;
}

/**
 * A page of the users a search finds. A substring match cannot use an index, and the database scanned every
 * user twice for it (count and page), milliseconds per search. The keys of the live users are kept instead,
 * in `keys` (dropped on any change to users on any node, like the pages), and searched in memory: only the
 * page's users are read. Keys are lower-cased as stored (`username_key`, `email_key`), with JavaScript's rules.
 */
export async function searchUsers(
  db: Database,
  keys: FeedCache<UserKeys>,
  q: { offset: number; limit: number; search: string },
): Promise<{ rows: UserWithRoles[]; total: number }> {
  const ids = matchingUsers(await keys.get('live', () => loadUserKeys(db)), q.search);
  return { rows: await findUsersWithRoleNames(db, ids.slice(q.offset, q.offset + q.limit)), total: ids.length };
}
