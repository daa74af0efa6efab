import { jwtVerify, SignJWT } from 'jose';

export interface TokenClaims {
  sub: string;
  username: string;
  sid: string;
}

/** HS256 access tokens (jose) with the claims of DESIGN §4. */
export class TokenSigner {
  private readonly key: Uint8Array;
  constructor(
    secret: string,
    private readonly lifetimeMs: number,
  ) {
    this.key = new TextEncoder().encode(secret);
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
  async verify(token: string): Promise<TokenClaims | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.key, { algorithms: ['HS256'] });
      if (typeof payload.sub !== 'string' || typeof payload.sid !== 'string') return undefined;
      return { sub: payload.sub, sid: payload.sid, username: String(payload.username ?? '') };
    } catch {
      return undefined;
    }
  }
}
