import { createSecretKey, type KeyObject } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import { lruCache, type Lru } from '../../lib/lru.ts';
import type { MaybePromise } from '../../lib/maybe-async.ts';

export interface TokenClaims {
  sub: string;
  username: string;
  sid: string;
}

interface Verified extends TokenClaims {
  exp: number;
}

/** HS256 access tokens (jose) with the claims of docs/decisions.md "Identity and access". */
export class TokenSigner {
  private readonly key: KeyObject;
  // A token is immutable, so its signature needs checking once; expiry is checked on every use.
  private readonly verified: Lru<string, Verified>;

  constructor(
    secret: string,
    private readonly lifetimeMs: number,
    cacheSize: number,
  ) {
    this.key = createSecretKey(Buffer.from(secret, 'utf8'));
    this.verified = lruCache(cacheSize);
  }

  async sign(claims: TokenClaims): Promise<{ token: string; expiresAt: Date }> {
    const now = Math.floor(Date.now() / 1000);
    const exp = now + Math.floor(this.lifetimeMs / 1000);
    const token = await new SignJWT({ username: claims.username, sid: claims.sid })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.sub)
      .setIssuedAt(now)
      .setExpirationTime(exp)
      .sign(this.key);
    return { token, expiresAt: new Date(exp * 1000) };
  }

  /** The claims of a valid token, or undefined for a malformed, wrongly signed or expired one. */
  verify(token: string): MaybePromise<TokenClaims | undefined> {
    const cached = this.verified.get(token);
    if (cached) return cached.exp * 1000 > Date.now() ? cached : undefined;
    return this.check(token);
  }

  private async check(token: string): Promise<TokenClaims | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.key, { algorithms: ['HS256'] });
      if (typeof payload.sub !== 'string' || typeof payload.sid !== 'string' || typeof payload.exp !== 'number')
        return undefined;
      const claims = { sub: payload.sub, sid: payload.sid, username: String(payload.username ?? ''), exp: payload.exp };
      this.verified.set(token, claims);
      return claims;
    } catch {
      return undefined;
    }
  }
}
