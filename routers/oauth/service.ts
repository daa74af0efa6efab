import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Database } from '../../db/database.ts';
import {
  findLinkedUserId,
  globalRoleIdsNamed,
  insertOAuthState,
  linkOAuthAccount,
  takeOAuthState,
  type OAuthLink,
} from '../../db/repositories/oauth.ts';
import {
  findTakenIdentity,
  findUserById,
  findUserByLogin,
  identityLockKeys,
  insertUser,
  type UserWithRoles,
} from '../../db/repositories/users.ts';
import { writeUnique } from '../../db/unique-write.ts';
import { AppError, BadRequestError, fieldError, NotFoundError, UnauthorizedError } from '../../lib/errors.ts';
import { ADMIN_ROLE } from '../auth/identity.ts';
import type { PasswordHasher } from '../auth/password-hash.ts';
import type { AuthService, LoginMethod } from '../auth/service.ts';
import type { LoginResult, MfaChallenge } from '../auth/schemas.ts';
import type { RequestInfo } from '../common/context.ts';
import type { UserService } from '../users/service.ts';
import { fillProfile, mapProfile, type Profile } from './field-mapping.ts';
import { linkableByEmail, PrivilegedLinkRefused } from './link-policy.ts';
import { ProviderClient, type Login } from './provider-client.ts';
import type { CallbackParams, OAuthOptions, OAuthProviderConfig } from './schemas.ts';
import type { StateSigner } from './state.ts';
import { preferredUsername, usernameCandidates } from './username.ts';

/**
 * Provider role names that may be granted at first login: never `admin`, which only an administrator assigns
 * (docs/decisions.md, "OAuth login"); a group claim at the provider is not an administrator's decision.
 */
const grantableRoles = (names: string[]) => names.filter((n) => n.toLowerCase() !== ADMIN_ROLE);

/** How long a started login may take at the provider before its state expires. */
const STATE_TTL_MS = 10 * 60_000;

const NOBODY = { id: null, username: '' };

/**
 * The nonce of one login, derived from its PKCE verifier: as random, kept in the same single-use row, and so
 * bound to this login only; the prefix keeps it apart from the PKCE challenge, the verifier's plain hash.
 */
const nonceOf = (verifier: string) => createHash('sha256').update(`oidc-nonce:${verifier}`).digest('base64url');

type ProviderAccount = Omit<OAuthLink, 'user_id'>;

/**
 * Login through external OAuth providers (docs/decisions.md, "OAuth login"): authorization with a signed,
 * single-use, expiring state, PKCE and (OpenID) a nonce; code exchange, ID token checks and user info at the
 * provider; the account linked by (provider, subject), matched to an existing user by a verified email, or
 * created when the provider allows it; then a session exactly as a password login opens one.
 */
export class OAuthService {
  private readonly providers: Map<string, OAuthProviderConfig>;
  /** One client per provider, kept for the process: it holds the discovered metadata and the provider's keys. */
  private readonly clients: Map<string, ProviderClient>;

  constructor(
    private readonly db: Database,
    private readonly auth: AuthService,
    private readonly users: UserService,
    private readonly hasher: PasswordHasher,
    private readonly states: StateSigner,
    private readonly options: OAuthOptions,
    private readonly logger: Logger,
  ) {
    this.providers = new Map(options.enabled ? options.providers.map((p) => [p.name, p]) : []);
    this.clients = new Map(
      [...this.providers.values()].map((p) => [p.name, new ProviderClient(p, options.timeoutMs, logger)]),
    );
  }

  /** Starts every provider's discovery without waiting for it (when the server starts listening). */
  warmUp(): void {
    for (const client of this.clients.values()) client.warmUp();
  }

  /** The providers a login page offers; none while OAuth is disabled. */
  list(): { name: string; display_name: string; icon_url: string | null }[] {
    return [...this.providers.values()].map((p) => ({
      name: p.name,
      display_name: p.display_name ?? p.name,
      icon_url: p.icon_url ?? null,
    }));
  }

  /** Starts a login: the provider's authorization address, with a fresh state and PKCE challenge. */
  async authorize(name: string): Promise<string> {
    const p = this.provider(name);
    const id = randomBytes(16).toString('base64url');
    const verifier = randomBytes(32).toString('base64url');
    const expiresAt = new Date(Date.now() + STATE_TTL_MS);
    // The provider must answer (discovery) before a row is spent on a login that cannot start.
    const client = this.clients.get(p.name)!;
    const state = await this.states.sign(id, p.name, expiresAt);
    const url = await client.authorizationUrl(this.login(p, client, state, verifier));
    await insertOAuthState(this.db, { id, provider: p.name, code_verifier: verifier, expires_at: expiresAt });
    return url;
  }

  /** Finishes a login with what the provider sent back; answers as a password login does, MFA step included. */
  async callback(name: string, params: CallbackParams, req: RequestInfo): Promise<LoginResult | MfaChallenge> {
    const p = this.provider(name);
    const method: LoginMethod = { provider: p.name };
    let user: UserWithRoles;
    try {
      user = await this.identify(p, params, req);
    } catch (error) {
      const actor = error instanceof PrivilegedLinkRefused ? error.target : NOBODY;
      await this.auth.fail(req, error instanceof AppError ? error.message : 'internal error', actor, method);
      throw error;
    }
    await this.auth.admit(user, req, method);
    // The provider proved who it is, as a password does: an account with MFA still passes its own second step.
    return this.auth.sessionOrMfaChallenge(user, req, method);
  }

  /**
   * Where a browser goes after a login through the GET callback: `server.root_url` with the token in the
   * fragment, or the MFA token when the mailed code is still to be given (to POST /auth/login).
   */
  landingUrl(result: LoginResult | MfaChallenge): string | undefined {
    const root = this.options.rootUrl.replace(/\/+$/, '');
    if (!root) return undefined;
    const [key, value] = 'mfa_token' in result ? ['mfa_token', result.mfa_token] : ['token', result.token];
    return `${root}/#${key}=${encodeURIComponent(value)}`;
  }

  /** The configured provider of that name: 404 when OAuth is off or no provider has it. */
  provider(name: string): OAuthProviderConfig {
    if (!this.options.enabled) throw new NotFoundError('oauth.disabled');
    const p = this.providers.get(name);
    if (!p) throw new NotFoundError('oauth.provider_not_found');
    return p;
  }

  private redirectUri(p: OAuthProviderConfig): string {
    return p.redirect_url ?? `${this.options.rootUrl.replace(/\/+$/, '')}/api/auth/oauth/${p.name}/callback`;
  }

  private login(p: OAuthProviderConfig, client: ProviderClient, state: string, verifier: string): Login {
    return { redirectUri: this.redirectUri(p), state, verifier, nonce: client.openid ? nonceOf(verifier) : undefined };
  }

  private async identify(p: OAuthProviderConfig, params: CallbackParams, req: RequestInfo): Promise<UserWithRoles> {
    if (params.code === undefined && params.error === undefined) throw fieldError('code', 'validation.required');
    const stateId = await this.states.verify(params.state, p.name);
    if (!stateId) throw new BadRequestError('oauth.state_invalid');
    const verifier = await takeOAuthState(this.db, stateId, p.name);
    if (!verifier) throw new BadRequestError('oauth.state_used');
    if (params.error !== undefined)
      throw new UnauthorizedError('oauth.denied', { error: params.error.replace(/[^\w.-]/g, '').slice(0, 64) });
    const client = this.clients.get(p.name)!;
    const answer = await client.signIn(params.code!, params.iss, this.login(p, client, params.state, verifier));
    const profile = fillProfile(mapProfile(answer.userInfo ?? {}, p), answer.idToken && mapProfile(answer.idToken, p));
    if (!profile.subject) throw new UnauthorizedError('oauth.no_subject');
    return this.findOrCreate(p, profile as Profile & { subject: string }, req);
  }

  /**
   * The linked user; else the user with the same email when the provider vouches for it (then linked); else a
   * new user when `auto_create_user` allows. First logins of one account or email take turns in this process;
   * across nodes they meet a unique index, and the loser looks again.
   */
  private async findOrCreate(
    p: OAuthProviderConfig,
    profile: Profile & { subject: string },
    req: RequestInfo,
    retries = 2,
  ): Promise<UserWithRoles> {
    return writeUnique(this.db, {
      keys: [`oauth.account:${p.name}:${profile.subject}`, ...identityLockKeys(undefined, profile.email)],
      write: () => this.findOrCreateOnce(p, profile, req),
      taken: async (violation) => {
        if (retries > 0) return this.findOrCreate(p, profile, req, retries - 1);
        throw violation;
      },
    });
  }

  private async findOrCreateOnce(
    p: OAuthProviderConfig,
    profile: Profile & { subject: string },
    req: RequestInfo,
  ): Promise<UserWithRoles> {
    const linkedId = await findLinkedUserId(this.db, p.name, profile.subject);
    if (linkedId) {
      const user = await findUserById(this.db, linkedId);
      if (!user) throw new UnauthorizedError('oauth.account_gone', { provider: p.name });
      return user;
    }
    if (!profile.email) throw new UnauthorizedError('oauth.no_email', { field: p.email_field });
    const link: ProviderAccount = { provider: p.name, subject: profile.subject, email: profile.email };
    const existing = await findUserByLogin(this.db, profile.email);
    if (existing) {
      if (!profile.emailVerified) throw new UnauthorizedError('oauth.email_unverified');
      if (!linkableByEmail(existing)) throw new PrivilegedLinkRefused(existing);
      await linkOAuthAccount(this.db, { ...link, user_id: existing.id });
      return existing;
    }
    if (!p.auto_create_user) throw new UnauthorizedError('oauth.no_account', { provider: p.name });
    return this.create(p, profile, link, req);
  }

  /** A user for a first login: a free username, a random password nobody knows, the roles the provider named. */
  private async create(
    p: OAuthProviderConfig,
    profile: Profile,
    link: ProviderAccount,
    req: RequestInfo,
  ): Promise<UserWithRoles> {
    let username = '';
    for (const candidate of usernameCandidates(preferredUsername(profile))) {
      username = candidate;
      if (!(await findTakenIdentity(this.db, candidate, undefined))) break;
    }
    const id = randomUUID();
    const user = {
      id,
      username,
      email: link.email,
      password_hash: await this.hasher.hash(randomBytes(32).toString('base64url')),
      full_name: profile.fullName,
      avatar: profile.avatar,
      status: 'active' as const,
      mfa_enabled: false,
      locale: req.locale,
    };
    await insertUser(this.db, user, await globalRoleIdsNamed(this.db, grantableRoles(profile.roles)), (trx) =>
      linkOAuthAccount(this.db, { ...link, user_id: id }, trx),
    );
    await this.users.created(id, { id, username }, req, { provider: p.name });
    return (await findUserById(this.db, id))!;
  }
}
