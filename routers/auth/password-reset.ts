import type { Database } from '../../db/database.ts';
import {
  consumeUserToken,
  countUserTokensSince,
  findUserToken,
  revokeUserTokens,
} from '../../db/repositories/user-tokens.ts';
import { findUserById, findUserByLogin } from '../../db/repositories/users.ts';
import { BadRequestError } from '../../lib/errors.ts';
import { KeyedLock } from '../../lib/keyed-lock.ts';
import type { Mailer } from '../mail/mailer.ts';
import type { RequestInfo } from '../common/context.ts';
import { effectiveStatus } from '../users/schemas.ts';
import type { UserService } from '../users/service.ts';
import { isLive, issueEmailToken, recipientOf, sha256 } from './email-tokens.ts';

export const RESET_TTL_MINUTES = 30;
/** Reset mails one address gets at most per RESET_TTL_MINUTES, on every node together (counted in the database). */
export const RESET_MAILS_PER_ADDRESS = 3;

/**
 * The path (under `server.root_url`) a reset mail links to. The web console's page reads the token from the
 * fragment, which browsers never send, so it stays out of access logs and Referer headers; without the console
 * the query form is kept for the frontend that serves that page.
 */
export function resetLinkPath(token: string, consolePath: string | undefined): string {
  const value = encodeURIComponent(token);
  return consolePath ? `${consolePath}/reset-password#token=${value}` : `/reset-password?token=${value}`;
}

/** Password reset by email (docs/decisions.md "Mail, MFA and rate limits"): a single-use link valid for RESET_TTL_MINUTES. */
export class PasswordResetService {
  /** One address's requests one after another, so concurrent ones see each other's links when they count. */
  private readonly perUser = new KeyedLock();

  constructor(
    private readonly db: Database,
    private readonly users: UserService,
    private readonly mailer: Mailer,
    /** `web.base_path` while the web console is served: the link opens its reset page. */
    private readonly consolePath?: string,
  ) {}

  /**
   * Answers at once, the same whether or not the address belongs to anyone: the lookup, the link and the mail
   * all happen after the answer (docs/decisions.md "Login limits").
   */
  request(email: string): void {
    this.mailer.sendFound('password_reset', () => this.issueLink(email));
  }

  private async issueLink(email: string) {
    // findUserByLogin also matches usernames; this route takes addresses only.
    const user = email.includes('@') ? await findUserByLogin(this.db, email) : undefined;
    if (!user || effectiveStatus(user) === 'disabled') return undefined;
    return this.perUser.run(user.id, async () => {
      const since = new Date(Date.now() - RESET_TTL_MINUTES * 60_000);
      if ((await countUserTokensSince(this.db, user.id, 'password_reset', since)) >= RESET_MAILS_PER_ADDRESS)
        return undefined;
      // The newest link is the only one that works.
      await revokeUserTokens(this.db, user.id, 'password_reset');
      const { token } = await issueEmailToken(this.db, user.id, 'password_reset', RESET_TTL_MINUTES * 60_000);
      return {
        to: recipientOf(user),
        params: { path: resetLinkPath(token, this.consolePath), minutes: RESET_TTL_MINUTES },
      };
    });
  }

  async confirm(token: string, password: string, req: RequestInfo): Promise<void> {
    const row = await findUserToken(this.db, 'password_reset', sha256(token));
    if (!isLive(row)) throw new BadRequestError('auth.reset_token_invalid');
    // A password the rules refuse leaves the link usable.
    this.users.checkPasswordLength(password);
    const user = await findUserById(this.db, row.user_id);
    if (!user || !(await consumeUserToken(this.db, row.id))) throw new BadRequestError('auth.reset_token_invalid');
    const self = {
      id: user.id,
      username: user.username,
      sessionId: '',
      isAdmin: false,
      permissions: new Set<string>(),
    };
    await this.users.setPassword(user.id, password, 'password_reset', { caller: self, req });
  }
}
