import { z } from 'zod';
import { isJsonObject, type Json } from './schemas.ts';

/** The configured names of a provider's user-info fields (defaults in the README's OAuth table: email, username, fullName, avatar). */
export interface FieldNames {
  email_field: string;
  username_field: string;
  full_name_field: string;
  avatar_field: string;
  role_field?: string;
}

/** What a login needs from the provider's user info, read through the configured field names. */
export interface Profile {
  /** The provider's stable account id: OIDC `sub`, else `id` (GitHub, GitLab and most plain OAuth2 APIs). */
  subject?: string;
  email?: string;
  /** Only a provider that says so (`<email field>_verified`, or OIDC `email_verified`, the boolean `true`) lets an email match an existing user. */
  emailVerified: boolean;
  username?: string;
  fullName: string;
  avatar: string;
  roles: string[];
}

/**
 * The value at a dotted path (`profile.email`). A key that itself contains dots, such as the namespaced claims
 * some providers send (`https://example.com/roles`), is found too: at each level the longest matching key wins.
 */
export function readPath(data: unknown, path: string): unknown {
  if (!isJsonObject(data)) return undefined;
  if (Object.hasOwn(data, path)) return data[path];
  for (let i = path.lastIndexOf('.'); i > 0; i = path.lastIndexOf('.', i - 1)) {
    const head = path.slice(0, i);
    if (Object.hasOwn(data, head)) {
      const found = readPath(data[head], path.slice(i + 1));
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

function text(value: unknown, max: number): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed ? trimmed.slice(0, max) : undefined;
}

/** Only the JSON boolean: OpenID Connect's `email_verified` is one, and a string "true" is a provider bug or a forgery. */
const isTrue = (value: unknown) => value === true;

/** Role names from an array of names, or from one string of names separated by commas or spaces. */
function roleNames(value: unknown): string[] {
  const list = Array.isArray(value) ? value : typeof value === 'string' ? value.split(/[\s,]+/) : [];
  return [
    ...new Set(
      list
        .filter((v): v is string => typeof v === 'string')
        .map((v) => v.trim())
        .filter((v) => v && v.length <= 64),
    ),
  ];
}

const email = z.email().max(255);

export function mapProfile(info: Json, names: FieldNames): Profile {
  const address = text(readPath(info, names.email_field), 255);
  return {
    subject: text(readPath(info, 'sub'), 255) ?? text(readPath(info, 'id'), 255),
    email: address !== undefined && email.safeParse(address).success ? address : undefined,
    // OIDC's top-level `email_verified` vouches for the top-level `email` only, never for an address read elsewhere.
    emailVerified:
      isTrue(readPath(info, `${names.email_field}_verified`)) ||
      (names.email_field === 'email' && isTrue(readPath(info, 'email_verified'))),
    username: text(readPath(info, names.username_field), 255),
    fullName: text(readPath(info, names.full_name_field), 255) ?? '',
    avatar: text(readPath(info, names.avatar_field), 1024) ?? '',
    roles: names.role_field ? roleNames(readPath(info, names.role_field)) : [],
  };
}

/**
 * The user info's profile, with what it lacks taken from the verified ID token's claims (read through the same
 * field names). The subject is the ID token's, which the user info was checked to match; an email comes with
 * its own source's verification, never one source's address with the other's `email_verified`.
 */
export function fillProfile(info: Profile, idToken: Profile | undefined): Profile {
  if (!idToken) return info;
  const email = info.email !== undefined ? info : idToken;
  return {
    subject: idToken.subject ?? info.subject,
    email: email.email,
    emailVerified: email.emailVerified,
    username: info.username ?? idToken.username,
    fullName: info.fullName || idToken.fullName,
    avatar: info.avatar || idToken.avatar,
    roles: info.roles.length ? info.roles : idToken.roles,
  };
}
