import { context, propagation } from '@opentelemetry/api';
import * as oidc from 'openid-client';
import type { Logger } from 'pino';
import { AppError, UnauthorizedError, UnavailableError } from '../../lib/errors.ts';
import { atHashMatches, CLOCK_TOLERANCE_S, idTokenCheck, issuedInFuture } from './id-token.ts';
import { isJsonObject, type Json, type OAuthProviderConfig } from './schemas.ts';

/** What one login sends the provider and checks its answer against. */
export interface Login {
  redirectUri: string;
  state: string;
  /** The PKCE verifier (RFC 7636); the provider gets its S256 challenge. */
  verifier: string;
  /** Sent to an OpenID provider, which must put it in the ID token. */
  nonce?: string;
}

/** What the provider says about the account: its user info and the claims of its verified ID token, each when it has one. */
export interface ProviderAnswer {
  userInfo?: Json;
  idToken?: Json;
}

/** The metadata's issuer of a provider configured without one (openid-client needs a value; no ID token reaches it). */
const noIssuer = (name: string) => `urn:console:oauth2-without-issuer:${name}`;

/**
 * Without an issuer nothing is known to check an ID token against (iss, keys), so the token endpoint's answer loses
 * it before openid-client reads it, and the user comes from the user info as for any OAuth 2 provider. An ID token
 * from the token endpoint came over the client's own TLS connection (OpenID Connect Core §3.1.3.7); unread, it
 * cannot sign anyone in as someone else either.
 */
const ignoringIdTokens =
  (fetch: oidc.CustomFetch, tokenEndpoint: string): oidc.CustomFetch =>
  async (url, init) => {
    const res = await fetch(url, init);
    if (url !== tokenEndpoint || !res.ok) return res;
    const body: unknown = await res
      .clone()
      .json()
      .catch(() => undefined);
    if (!isJsonObject(body) || !Object.hasOwn(body, 'id_token')) return res;
    const { id_token: _, ...rest } = body;
    return Response.json(rest, { status: res.status });
  };

const headerSetter = { set: (carrier: Headers, key: string, value: string) => carrier.set(key, value) };

/**
 * One provider, through openid-client: endpoints from the configuration or OpenID discovery (explicit addresses
 * win), the code exchange with PKCE, ID token checks (signature against the provider's JWKS, iss, aud, exp,
 * nonce, at_hash) and user info. Every call has the `oauth.timeout` deadline. Answers name the provider and
 * never carry what it said; the log gets the status and the provider's error code, never a secret, code or token.
 */
export class ProviderClient {
  /** The provider's configuration; a failed discovery is dropped so that the next login tries again. */
  private configuration?: Promise<oidc.Configuration>;
  /** An OpenID login: an issuer to check ID tokens against and `openid` among the scopes, so a nonce is sent. */
  readonly openid: boolean;
  /** Plain http is allowed only where the configuration itself names an http address (development, tests). */
  private readonly insecure: boolean;

  constructor(
    private readonly p: OAuthProviderConfig,
    private readonly timeoutMs: number,
    private readonly logger: Logger,
  ) {
    const askedForIdTokens = p.scopes.split(/\s+/).includes('openid');
    this.openid = p.issuer !== undefined && askedForIdTokens;
    this.insecure = [p.issuer, p.auth_url, p.token_url, p.user_info_url].some((url) => url?.startsWith('http:'));
    if (askedForIdTokens && !p.issuer)
      logger.warn(
        { provider: p.name },
        'OAuth provider has no issuer: its ID tokens are not verified and not used, the user comes from user_info_url; set issuer to verify them',
      );
  }

  /** Starts discovery without waiting for it, so that the first login does not pay for it and startup never waits. */
  warmUp(): void {
    if (!this.p.issuer) return;
    this.config().catch(() => undefined);
  }

  /** The provider's authorization address for one login; parameters already in its address are kept. */
  async authorizationUrl(login: Login): Promise<string> {
    const params: Record<string, string> = {
      response_type: 'code',
      redirect_uri: login.redirectUri,
      scope: this.p.scopes,
      state: login.state,
      code_challenge: await oidc.calculatePKCECodeChallenge(login.verifier),
      code_challenge_method: 'S256',
    };
    if (login.nonce !== undefined) params.nonce = login.nonce;
    return oidc.buildAuthorizationUrl(await this.config(), params).href;
  }

  /**
   * Exchanges the code the provider sent back (with `iss` when it names itself) and reads the account: the
   * verified ID token's claims and the user info, which must be about the ID token's subject.
   */
  async signIn(code: string, iss: string | undefined, login: Login): Promise<ProviderAnswer> {
    const config = await this.config();
    const callback = new URL(login.redirectUri);
    callback.search = '';
    callback.searchParams.set('code', code);
    callback.searchParams.set('state', login.state);
    // Checked only where there is an issuer to check it against.
    if (iss !== undefined && this.p.issuer) callback.searchParams.set('iss', iss);
    const tokens = await oidc
      .authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: login.verifier,
        expectedState: login.state,
        expectedNonce: login.nonce,
        idTokenExpected: this.openid,
      })
      .catch((error: unknown) => this.refused(error, 'token'));
    const claims = tokens.claims();
    if (claims && !atHashMatches(tokens.id_token!, claims.at_hash, tokens.access_token))
      throw this.badIdToken('at_hash');
    if (claims && issuedInFuture(claims.iat)) throw this.badIdToken('iat');
    const endpoint = config.serverMetadata().userinfo_endpoint;
    if (!endpoint) return { idToken: claims };
    const userInfo = claims
      ? await oidc
          .fetchUserInfo(config, tokens.access_token, claims.sub)
          .catch((error: unknown) => this.refused(error, 'userinfo'))
      : await this.plainUserInfo(config, endpoint, tokens.access_token);
    return { userInfo, idToken: claims };
  }

  /** User info of a plain OAuth 2 API (GitHub's `/user`): any JSON object, `sub` or not. */
  private async plainUserInfo(config: oidc.Configuration, endpoint: string, accessToken: string): Promise<Json> {
    const res = await oidc
      .fetchProtectedResource(config, accessToken, new URL(endpoint), 'GET')
      .catch((error: unknown) => this.refused(error, 'userinfo'));
    if (res.status !== 200) throw this.failed('userinfo', res.status);
    const body: unknown = await res.json().catch(() => undefined);
    if (!isJsonObject(body)) throw this.badAnswer('userinfo', res.status);
    return body;
  }

  private config(): Promise<oidc.Configuration> {
    this.configuration ??= this.load().catch((error: unknown) => {
      this.configuration = undefined;
      throw error;
    });
    return this.configuration;
  }

  private async load(): Promise<oidc.Configuration> {
    const { p } = this;
    const execute = this.insecure ? [oidc.allowInsecureRequests] : [];
    const metadata: oidc.ServerMetadata = {
      ...(p.issuer ? await this.discover(p.issuer, execute) : { issuer: noIssuer(p.name) }),
      ...(p.auth_url && { authorization_endpoint: p.auth_url }),
      ...(p.token_url && { token_endpoint: p.token_url }),
      ...(p.user_info_url && { userinfo_endpoint: p.user_info_url }),
    };
    const auth =
      p.token_auth_method === 'client_secret_post'
        ? oidc.ClientSecretPost(p.client_secret)
        : oidc.ClientSecretBasic(p.client_secret);
    const config = new oidc.Configuration(metadata, p.client_id, { [oidc.clockTolerance]: CLOCK_TOLERANCE_S }, auth);
    config.timeout = this.timeoutMs / 1000;
    config[oidc.customFetch] = p.issuer ? this.fetch : ignoringIdTokens(this.fetch, new URL(p.token_url!).href);
    for (const extension of execute) extension(config);
    // ID token signatures: openid-client checks the claims itself, the signature only when asked to.
    if (metadata.jwks_uri) oidc.enableNonRepudiationChecks(config);
    return config;
  }

  /** `<issuer>/.well-known/openid-configuration`, whose `issuer` must be the configured one. */
  private async discover(
    issuer: string,
    execute: ((config: oidc.Configuration) => void)[],
  ): Promise<oidc.ServerMetadata> {
    let metadata: oidc.ServerMetadata;
    try {
      const found = await oidc.discovery(new URL(issuer), this.p.client_id, undefined, undefined, {
        execute,
        timeout: this.timeoutMs / 1000,
        [oidc.customFetch]: this.fetch,
      });
      metadata = { ...found.serverMetadata() };
    } catch (error) {
      const e = error as { code?: string; cause?: unknown };
      this.logger.warn(
        { provider: this.p.name, reason: e.cause instanceof AppError ? 'unreachable' : (e.code ?? 'error') },
        'OAuth provider discovery failed',
      );
      throw new UnavailableError('oauth.discovery_failed', { provider: this.p.name });
    }
    // Without its keys no ID token could be checked: OpenID Discovery requires them.
    if (!metadata.jwks_uri || !metadata.authorization_endpoint) {
      this.logger.warn({ provider: this.p.name, reason: 'incomplete metadata' }, 'OAuth provider discovery failed');
      throw new UnavailableError('oauth.discovery_failed', { provider: this.p.name });
    }
    return metadata;
  }

  /** Every request to the provider: the current trace context goes along as `traceparent`; failures to connect become 503. */
  private readonly fetch: oidc.CustomFetch = async (url, init) => {
    const headers = new Headers(init.headers);
    propagation.inject(context.active(), headers, headerSetter);
    try {
      return await fetch(url, { ...init, headers });
    } catch (error) {
      const e = error as { name?: string; cause?: { code?: string } };
      this.logger.warn(
        {
          provider: this.p.name,
          endpoint: new URL(url).pathname,
          reason: e.name === 'TimeoutError' ? 'timeout' : (e.cause?.code ?? e.name),
        },
        'OAuth provider unreachable',
      );
      throw new UnavailableError('oauth.provider_unreachable', { provider: this.p.name });
    }
  };

  /** The answer to a refused or failed step: the user's fault (401) or the provider's or configuration's (503). */
  private refused(error: unknown, step: 'token' | 'userinfo'): never {
    if (error instanceof AppError) throw error;
    if (error instanceof oidc.ClientError && error.cause instanceof AppError) throw error.cause;
    const check = idTokenCheck(error);
    if (check) throw this.badIdToken(check);
    if (error instanceof oidc.ResponseBodyError) throw this.refusal(step, error.status, error.error);
    if (error instanceof oidc.WWWAuthenticateChallengeError) throw this.failed(step, error.status);
    const e = error as { code?: string; message?: string; cause?: unknown };
    if (e.code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' && e.cause instanceof Response)
      throw this.refusal(step, e.cause.status, undefined);
    // Some providers (GitHub) answer a refused code with 200 and an `error`.
    const body = (e.cause as { cause?: { body?: Json } } | undefined)?.cause?.body;
    if (step === 'token' && typeof body?.error === 'string') throw this.refusal(step, 200, body.error);
    if (e.code === 'OAUTH_INVALID_RESPONSE' && /"iss"/.test(String((e.cause as Error | undefined)?.message))) {
      this.logger.info({ provider: this.p.name }, 'OAuth login answer named another issuer');
      throw new UnauthorizedError('oauth.issuer_mismatch', { provider: this.p.name });
    }
    throw this.badAnswer(step, 200, e.code);
  }

  private refusal(step: 'token' | 'userinfo', status: number, providerError: string | undefined): AppError {
    const error = providerError?.slice(0, 64);
    // Wrong client credentials are the configuration's fault, not the user's; so is a failing user info.
    if (step === 'userinfo' || status >= 500 || status === 401 || error === 'invalid_client')
      return this.failed(step, status, error);
    this.logger.info({ provider: this.p.name, status, error }, 'OAuth provider refused an authorization code');
    return new UnauthorizedError('oauth.code_rejected');
  }

  private failed(step: string, status: number, error?: string): UnavailableError {
    this.logger.warn({ provider: this.p.name, step, status, error }, 'OAuth provider refused the client or failed');
    return new UnavailableError('oauth.provider_failed', { provider: this.p.name, status });
  }

  private badIdToken(check: string): UnauthorizedError {
    this.logger.info({ provider: this.p.name, check }, 'OAuth provider ID token refused');
    return new UnauthorizedError('oauth.id_token_invalid', { check });
  }

  private badAnswer(step: string, status: number, reason?: string): UnavailableError {
    this.logger.warn({ provider: this.p.name, step, status, reason }, 'OAuth provider answer could not be read');
    return new UnavailableError('oauth.provider_bad_answer', { provider: this.p.name });
  }
}
