import { createHash } from 'node:crypto';
import { decodeProtectedHeader } from 'jose';
import * as oidc from 'openid-client';

/** The hash OIDC Core §3.2.2.9 pairs with a JWS algorithm: the one it names, SHA-512 for Ed25519. */
function hashOf(alg: string | undefined): string | undefined {
  if (alg === 'EdDSA' || alg === 'Ed25519') return 'sha512';
  const bits = /^(?:RS|PS|ES)(256|384|512)$/.exec(alg ?? '')?.[1];
  return bits && `sha${bits}`;
}

/**
 * Whether an ID token's `at_hash` (when it has one) belongs to the access token it came with: the left half of
 * the token's hash under the ID token's algorithm, base64url. openid-client checks it for hybrid responses only.
 */
export function atHashMatches(idToken: string, atHash: unknown, accessToken: string): boolean {
  if (atHash === undefined) return true;
  const hash = hashOf(decodeProtectedHeader(idToken).alg);
  if (!hash || typeof atHash !== 'string') return false;
  const digest = createHash(hash).update(accessToken).digest();
  return digest.subarray(0, digest.length / 2).toString('base64url') === atHash;
}

/** Seconds a provider's clock may be ahead of or behind this server's, for every time an ID token carries. */
export const CLOCK_TOLERANCE_S = 30;

/**
 * Whether an ID token says it was made later than the allowed skew from now: openid-client holds `exp` and
 * `nbf` to the tolerance, but `iat` only to being a number (and, for hybrid responses, not too old).
 */
export const issuedInFuture = (iat: number, nowMs = Date.now()) => iat > nowMs / 1000 + CLOCK_TOLERANCE_S;

/** The claim whose name a failed JWT check of oauth4webapi quotes in its message (`JWT "nonce" claim missing`). */
const quotedClaim = (message: string) => /"(\w+)"/.exec(message)?.[1];

/**
 * Which check of an ID token a failure of openid-client reports (`signature`, `iss`, `aud`, `exp`, `nonce`,
 * `sub`, ...), or undefined for failures that are not about the ID token. The library wraps its processing
 * errors once, so the original is the cause.
 */
export function idTokenCheck(error: unknown): string | undefined {
  if (!(error instanceof oidc.ClientError)) return undefined;
  const original = error.cause instanceof Error ? error.cause : error;
  const cause = (original as { cause?: { claim?: string; attribute?: string } }).cause;
  switch (error.code) {
    case 'OAUTH_JWT_CLAIM_COMPARISON_FAILED':
    case 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED':
      return cause?.claim ?? 'claims';
    case 'OAUTH_KEY_SELECTION_FAILED':
      return 'signature';
    // The user info of another account than the ID token's.
    case 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED':
      return cause?.attribute === 'sub' ? 'sub' : undefined;
    case 'OAUTH_INVALID_RESPONSE':
    case 'OAUTH_PARSE_ERROR':
    case 'OAUTH_UNSUPPORTED_OPERATION':
      if (/"id_token"/.test(original.message)) return 'id_token';
      if (!/JWT|JWS/.test(original.message)) return undefined;
      return /signature|JWS/.test(original.message) ? 'signature' : (quotedClaim(original.message) ?? 'format');
    default:
      return undefined;
  }
}
