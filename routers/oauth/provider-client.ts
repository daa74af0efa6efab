import { createHash } from 'node:crypto';
import { context, propagation } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { UnauthorizedError, UnavailableError } from '../../lib/errors.ts';
import { isJsonObject, type Json, type OAuthProviderConfig } from './schemas.ts';

/** PKCE S256 (RFC 7636): the challenge sent with the authorization request. */
const pkceChallenge = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** The provider's authorization address for one login; parameters already in `auth_url` are kept. */
export function authorizationUrl(p: OAuthProviderConfig, login: { redirectUri: string; state: string; verifier: string }): string {
  const url = new URL(p.auth_url);
  const q = url.searchParams;
  q.set('response_type', 'code');
  q.set('client_id', p.client_id);
  q.set('redirect_uri', login.redirectUri);
  q.set('scope', p.scopes);
  q.set('state', login.state);
  q.set('code_challenge', pkceChallenge(login.verifier));
  q.set('code_challenge_method', 'S256');
  return url.href;
}

// RFC 6749 §2.3.1: the client id and secret are form-encoded before they are joined for HTTP Basic.
const formEncode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');

function parseBody(text: string, contentType: string): unknown {
  if (contentType.includes('application/x-www-form-urlencoded')) return Object.fromEntries(new URLSearchParams(text));
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Calls to one provider with a deadline each. Answers name the provider and never carry what it said; the log
 * gets the status and the provider's error code, never a secret, code or token.
 */
export class ProviderClient {
  constructor(
    private readonly p: OAuthProviderConfig,
    private readonly timeoutMs: number,
    private readonly logger: Logger,
  ) {}

  /** Exchanges an authorization code (with its PKCE verifier) for an access token at `token_url`. */
  async exchangeCode(code: string, verifier: string, redirectUri: string): Promise<string> {
    const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (this.p.token_auth_method === 'client_secret_post') {
      form.set('client_id', this.p.client_id);
      form.set('client_secret', this.p.client_secret);
    } else {
      headers.authorization = `Basic ${Buffer.from(`${formEncode(this.p.client_id)}:${formEncode(this.p.client_secret)}`).toString('base64')}`;
    }
    const { status, body } = await this.call('token', this.p.token_url, { method: 'POST', headers, body: form.toString() });
    const answer = isJsonObject(body) ? body : {};
    // Some providers (GitHub) answer a refused code with 200 and an `error`.
    const error = typeof answer.error === 'string' ? answer.error.slice(0, 64) : undefined;
    if (status >= 500 || status === 401 || error === 'invalid_client') {
      // Wrong client credentials are the configuration's fault, not the user's.
      this.logger.warn({ provider: this.p.name, status, error }, 'OAuth token endpoint refused the client or failed');
      throw new UnavailableError('oauth.provider_failed', { provider: this.p.name, status });
    }
    if (status >= 400 || error) {
      this.logger.info({ provider: this.p.name, status, error }, 'OAuth provider refused an authorization code');
      throw new UnauthorizedError('oauth.code_rejected');
    }
    if (typeof answer.access_token !== 'string' || !answer.access_token) throw this.badAnswer('token', status);
    return answer.access_token;
  }

  /** The user info (`user_info_url`) of the account the access token belongs to. */
  async userInfo(accessToken: string): Promise<Json> {
    const { status, body } = await this.call('userinfo', this.p.user_info_url, { method: 'GET', headers: { authorization: `Bearer ${accessToken}` } });
    if (status !== 200) {
      this.logger.warn({ provider: this.p.name, status }, 'OAuth user info request failed');
      throw new UnavailableError('oauth.provider_failed', { provider: this.p.name, status });
    }
    if (!isJsonObject(body)) throw this.badAnswer('userinfo', status);
    return body;
  }

  private badAnswer(step: string, status: number): UnavailableError {
    this.logger.warn({ provider: this.p.name, step, status }, 'OAuth provider answer could not be read');
    return new UnavailableError('oauth.provider_bad_answer', { provider: this.p.name });
  }

  /** One request; the current trace context goes along as `traceparent`, so the provider's side joins the trace. */
  private async call(step: string, url: string, init: { method: string; headers: Record<string, string>; body?: string }): Promise<{ status: number; body: unknown }> {
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'console-oauth', ...init.headers };
    propagation.inject(context.active(), headers);
    try {
      const res = await fetch(url, { ...init, headers, redirect: 'manual', signal: AbortSignal.timeout(this.timeoutMs) });
      const text = await res.text();
      return { status: res.status, body: parseBody(text, res.headers.get('content-type') ?? '') };
    } catch (error) {
      const e = error as { name?: string; cause?: { code?: string } };
      this.logger.warn({ provider: this.p.name, step, reason: e.name === 'TimeoutError' ? 'timeout' : (e.cause?.code ?? e.name) }, 'OAuth provider unreachable');
      throw new UnavailableError('oauth.provider_unreachable', { provider: this.p.name });
    }
  }
}
