import { randomUUID } from 'node:crypto';
import type { Database } from '../../db/database.ts';
import { insertSession, revokeSession } from '../../db/repositories/sessions.ts';
import { consumeUserToken, countTokenAttempt, findUserToken } from '../../db/repositories/user-tokens.ts';
import {
  findUserById,
  findUserByLogin,
  recordLoginFailure,
  recordLoginSuccess,
  unlockUser,
  type UserWithRoles,
} from '../../db/repositories/users.ts';
import { fieldError, InvalidUserError, UnauthorizedError } from '../../lib/errors.ts';
import { andThen, type MaybePromise } from '../../lib/maybe-async.ts';
import type { AuditWriter } from '../audit/writer.ts';
import type { Mailer } from '../mail/mailer.ts';
import type { SettingsService } from '../settings/service.ts';
import type { Caller, RequestInfo } from '../common/context.ts';
import { effectiveStatus, toUserJson } from '../users/schemas.ts';
import { codeMatches, isLive, issueEmailToken, recipientOf, sha256 } from './email-tokens.ts';
import {
  describe,
  sessionTimes,
  SESSIONS_CHANNEL,
  USERS_CHANNEL,
  type Identity,
  type IdentityStore,
} from './identity.ts';
import type { LoginGuard } from './login-guard.ts';
import type { PasswordHasher } from './password-hash.ts';
import type { LoginInput, LoginResult, MfaChallenge } from './schemas.ts';
import type { TokenClaims, TokenSigner } from './tokens.ts';

const TOUCH_EVERY_MS = 60_000;
export const MFA_CODE_MINUTES = 5;
export const MFA_MAX_ATTEMPTS = 5;

/**
 * How a login was made, as its audit records tell it: a password login adds nothing, an OAuth login the
 * provider's name. Both are audited as `login` / `login_failed`, so one filter finds every login.
 */
export interface LoginMethod {
  provider?: string;
}

const PASSWORD: LoginMethod = {};

/** Login, logout, refresh, and the per-request check of token, user and session (docs/decisions.md "Identity and access"). */
export class AuthService {
  constructor(
    private readonly db: Database,
    private readonly identities: IdentityStore,
    private readonly tokens: TokenSigner,
    private readonly hasher: PasswordHasher,
    private readonly settings: SettingsService,
    private readonly audit: AuditWriter,
    private readonly mailer: Mailer,
    private readonly guard: LoginGuard,
  ) {}

  // Without a promise when token, user and session are cached and no session write is due (most requests).
  authenticate(req: RequestInfo): MaybePromise<Caller> {
    const header = req.authorization;
    if (!header) throw new UnauthorizedError('auth.missing_token');
    return andThen(this.claimsOf(header), (claims) => {
      if (!claims) throw new UnauthorizedError('auth.invalid_token');
      // The user is checked before the session: a deleted, disabled or locked user's token answers E4012
      // although those changes also revoke the sessions.
      return andThen(
        andThen(this.activeIdentity(claims.sub), (identity) => this.callerIn(claims, identity)),
        (caller) => {
          req.identified?.(caller.id);
          return caller;
        },
      );
    });
  }

  /**
   * The caller of a session known without a token (a live-events ticket, a stream checked again): the same
   * checks of user and session as a request's, which throw the same errors.
   */
  authenticateSession(userId: string, sessionId: string): MaybePromise<Caller> {
    return andThen(this.activeIdentity(userId), (identity) =>
      this.callerIn({ sub: userId, sid: sessionId, username: identity.user.username }, identity),
    );
  }

  private activeIdentity(userId: string): MaybePromise<Identity> {
    return andThen(this.identities.identity(userId), (identity) => {
      if (!identity || effectiveStatus(identity.user) !== 'active') throw new InvalidUserError('auth.user_invalid');
      return identity;
    });
  }

  /** The caller, when the token's session is live (its activity recorded). */
  private callerIn(claims: TokenClaims, identity: Identity): MaybePromise<Caller> {
    return andThen(this.identities.session(claims.sid), (session) => {
      const now = new Date();
      const idleMs = this.settings.get<number>('session_idle_timeout_minutes') * 60_000;
      const times = session && sessionTimes(session);
      if (
        !session ||
        !times ||
        session.user_id !== claims.sub ||
        session.revoked_at !== null ||
        times.expiresAt <= now.getTime() ||
        now.getTime() - times.lastSeenAt > idleMs
      ) {
        throw new UnauthorizedError('auth.session_ended');
      }
      const caller: Caller = {
        id: identity.user.id,
        username: identity.user.username,
        sessionId: session.id,
        isAdmin: identity.isAdmin,
        permissions: identity.permissions,
      };
      return andThen(this.identities.touch(session, now, Math.min(TOUCH_EVERY_MS, idleMs / 4)), () => caller);
    });
  }

  /** Audits a refused login. */
  async fail(
    req: RequestInfo,
    reason: string,
    actor: { id: string | null; username: string },
    method = PASSWORD,
  ): Promise<void> {
    await this.audit.write({
      action: 'login_failed',
      resource_type: 'session',
      status: 'failure',
      actor,
      req,
      details: { ...method, reason },
    });
  }

  /** The user id of a correctly signed, unexpired bearer token (rate limits key on it); nothing else is checked. */
  async subjectOf(authorization: string | undefined): Promise<string | undefined> {
    return (await this.claimsOf(authorization))?.sub;
  }

  private claimsOf(authorization: string | undefined) {
    const match = authorization ? /^Bearer\s+(\S+)$/i.exec(authorization) : null;
    return match ? this.tokens.verify(match[1]!) : undefined;
  }

  /** `POST /auth/login`: a password login, or its MFA step when the input carries `mfa_token`. */
  loginWith(input: LoginInput, req: RequestInfo): Promise<LoginResult | MfaChallenge> {
    if (input.mfa_token !== undefined) {
      if (input.mfa_code === undefined) throw fieldError('mfa_code', 'validation.required');
      return this.completeMfa(input.mfa_token, input.mfa_code, req);
    }
    if (input.username === undefined) throw fieldError('username', 'validation.required');
    if (input.password === undefined) throw fieldError('password', 'validation.required');
    return this.login(input.username, input.password, req);
  }

  async login(login: string, password: string, req: RequestInfo): Promise<LoginResult | MfaChallenge> {
    const found = await findUserByLogin(this.db, login);
    this.guard.count(req, found ? { accountId: found.id } : { name: login });
    const user = found && (await this.guard.inTurn(found.id, () => this.checkPassword(found.id, password, req)));
    if (!user) {
      await this.guard.hash(req, () => this.hasher.burn(password));
      await this.fail(req, 'unknown user', { id: null, username: login.slice(0, 64) });
      throw new UnauthorizedError('auth.bad_credentials');
    }
    // Disabled is told only after a correct password, so it reveals nothing about the account.
    await this.admit(user, req);
    return this.sessionOrMfaChallenge(user, req);
  }

  /** An admitted login's answer: for an account with MFA the challenge (its code mailed), else the session. */
  async sessionOrMfaChallenge(
    user: UserWithRoles,
    req: RequestInfo,
    method = PASSWORD,
  ): Promise<LoginResult | MfaChallenge> {
    if (!user.mfa_enabled) return this.openSession(user, req, method);
    const { token, code } = await issueEmailToken(this.db, user.id, 'mfa', MFA_CODE_MINUTES * 60_000, true);
    // The code goes to the stored address in the language of this login.
    this.mailer.send(recipientOf({ ...user, locale: req.locale }), 'mfa_code', {
      code: code!,
      minutes: MFA_CODE_MINUTES,
    });
    return { mfa_required: true, mfa_token: token };
  }

  /**
   * The account when the password is right; undefined when it has gone meanwhile. Read again in the account's
   * turn: a guess that waited sees the lock the one before it set. During a lock no password is checked and
   * every one gets the answer of a wrong one, in about the time a check takes (docs/decisions.md "Login limits").
   */
  private async checkPassword(id: string, password: string, req: RequestInfo): Promise<UserWithRoles | undefined> {
    const user = await findUserById(this.db, id);
    if (!user) return undefined;
    const actor = { id: user.id, username: user.username };
    if (effectiveStatus(user) === 'locked') {
      await this.hasher.stall();
      await this.fail(req, 'account locked', actor);
      throw new UnauthorizedError('auth.bad_credentials');
    }
    if (await this.guard.hash(req, () => this.hasher.verify(password, user.password_hash))) return user;
    const lockMinutes = this.settings.get<number>('login_failure_lockout_minutes');
    const lockedNow = await recordLoginFailure(
      this.db,
      user.id,
      this.settings.get<number>('login_failure_attempts'),
      new Date(Date.now() + lockMinutes * 60_000),
    );
    if (lockedNow) {
      await this.identities.changed(USERS_CHANNEL);
      this.mailer.send(recipientOf(user), 'account_locked', { minutes: lockMinutes });
    }
    await this.fail(req, lockedNow ? 'wrong password; account locked' : 'wrong password', actor);
    throw new UnauthorizedError('auth.bad_credentials');
  }

  /**
   * The second step of an MFA login. Each token allows MFA_MAX_ATTEMPTS codes; the last wrong one, and the
   * right one, end it.
   */
  async completeMfa(mfaToken: string, code: string, req: RequestInfo): Promise<LoginResult> {
    const row = await findUserToken(this.db, 'mfa', sha256(mfaToken));
    if (!isLive(row) || !(await countTokenAttempt(this.db, row.id, MFA_MAX_ATTEMPTS)))
      throw new UnauthorizedError('auth.mfa_token_invalid');
    const user = await findUserById(this.db, row.user_id);
    const actor = { id: row.user_id, username: user?.username ?? '' };
    if (!codeMatches(row, mfaToken, code)) {
      if (row.attempts + 1 >= MFA_MAX_ATTEMPTS) await consumeUserToken(this.db, row.id);
      await this.fail(req, 'wrong mfa code', actor);
      throw new UnauthorizedError('auth.mfa_code_invalid');
    }
    if (!(await consumeUserToken(this.db, row.id)) || !user) throw new UnauthorizedError('auth.mfa_token_invalid');
    await this.admit(user, req);
    return this.openSession(user, req);
  }

  /**
   * What every login checks once the credentials proved who it is: a disabled or locked account is refused
   * (and the refusal audited); a lock whose time has passed ends here.
   */
  async admit(user: UserWithRoles, req: RequestInfo, method = PASSWORD): Promise<void> {
    const status = effectiveStatus(user);
    if (status !== 'active') {
      await this.fail(req, `account ${status}`, { id: user.id, username: user.username }, method);
      throw new UnauthorizedError(status === 'disabled' ? 'auth.account_disabled' : 'auth.account_locked');
    }
    if (user.status === 'locked') {
      await unlockUser(this.db, user.id);
      await this.identities.changed(USERS_CHANNEL);
    }
  }

  /** The session, token and audit record of an admitted login. */
  async openSession(user: UserWithRoles, req: RequestInfo, method = PASSWORD): Promise<LoginResult> {
    const actor = { id: user.id, username: user.username };
    await recordLoginSuccess(this.db, user.id, req.locale);
    // last_login_at is shown in user lists and records; every node drops what it cached of users.
    await this.identities.changed(USERS_CHANNEL);
    const sessionId = randomUUID();
    const { token, expiresAt } = await this.tokens.sign({ sub: user.id, username: user.username, sid: sessionId });
    const now = new Date().toISOString();
    await insertSession(this.db, {
      id: sessionId,
      user_id: user.id,
      ip: req.ip,
      user_agent: req.userAgent.slice(0, 512),
      created_at: now,
      last_seen_at: now,
      expires_at: expiresAt.toISOString(),
    });
    await this.audit.write({
      action: 'login',
      resource_type: 'session',
      resource_id: sessionId,
      actor,
      req,
      details: { ...method },
    });
    user.last_login_at = now;
    user.status = 'active';
    return { token, expires_at: expiresAt.toISOString(), user: toUserJson(describe(user).user) };
  }

  async logout(caller: Caller, req: RequestInfo): Promise<void> {
    await revokeSession(this.db, caller.sessionId);
    await this.identities.changed(SESSIONS_CHANNEL);
    await this.audit.write({
      action: 'logout',
      resource_type: 'session',
      resource_id: caller.sessionId,
      actor: caller,
      req,
    });
  }

  /** A new token for the same session, which lives on until the new token expires. */
  async refresh(caller: Caller): Promise<{ token: string; expires_at: string }> {
    const { token, expiresAt } = await this.tokens.sign({
      sub: caller.id,
      username: caller.username,
      sid: caller.sessionId,
    });
    const session = await this.identities.session(caller.sessionId);
    if (session) await this.identities.touch(session, new Date(), 0, expiresAt);
    return { token, expires_at: expiresAt.toISOString() };
  }
}
