import { createSecretKey, type KeyObject } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';

/**
 * The `state` sent to a provider: a JWT (HS256 with the service's JWT secret) naming a pending login's row and
 * the provider, expiring with it. Its audience keeps it apart from access tokens, which carry none, in both
 * directions. The signature refuses forged states before the database is asked; the row makes it single-use.
 */
export class StateSigner {
  private readonly key: KeyObject;

  constructor(secret: string) {
    this.key = createSecretKey(Buffer.from(secret, 'utf8'));
  }

  sign(id: string, provider: string, expiresAt: Date): Promise<string> {
    return new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setJti(id)
      .setAudience(audience(provider))
      .setIssuedAt()
      .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
      .sign(this.key);
  }

  /** The row id of a valid, unexpired state issued for this provider; undefined otherwise. */
  async verify(state: string, provider: string): Promise<string | undefined> {
    try {
      const { payload } = await jwtVerify(state, this.key, { algorithms: ['HS256'], audience: audience(provider) });
      return typeof payload.jti === 'string' ? payload.jti : undefined;
    } catch {
      return undefined;
    }
  }
}

const audience = (provider: string) => `console:oauth-state:${provider}`;
