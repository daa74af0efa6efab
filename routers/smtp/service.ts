import type { ConnectionOptions } from 'node:tls';
import type { Logger } from 'pino';
import type { Database } from '../../db/database.ts';
import { readAllSettings, writeSettings } from '../../db/repositories/settings.ts';
import { BadRequestError, fieldError } from '../../lib/errors.ts';
import { open, seal } from '../../lib/secret-box.ts';
import type { AuditWriter } from '../audit/writer.ts';
import type { Caller, RequestInfo } from '../common/context.ts';
import { SMTP_DEFAULTS, type SmtpSettings, type StoredSmtp, type UpdateSmtpInput } from './schemas.ts';
import { mailError, mailErrorFields, sendMail, type OutgoingMail } from './transport.ts';

/** Stored in the settings table under a key the settings registry does not declare, so `/system/settings` never shows it. */
const STORAGE_KEY = 'smtp';

function publicPart(stored: SmtpSettings): SmtpSettings {
  const { host, port, username, from_email, from_name, use_tls, use_ssl } = stored;
  return { host, port, username, from_email, from_name, use_tls, use_ssl };
}

/** The SMTP settings (admin only, docs/decisions.md "Mail, MFA and rate limits") and the one way mail leaves the service. */
export class SmtpService {
  constructor(
    private readonly db: Database,
    private readonly encryptKey: () => Buffer,
    private readonly audit: AuditWriter,
    private readonly logger: Logger,
    /** TLS options for every connection (tests trust their own server's certificate this way). */
    private readonly tls: ConnectionOptions = {},
  ) {}

  private async stored(): Promise<StoredSmtp | undefined> {
    const raw = (await readAllSettings(this.db)).get(STORAGE_KEY);
    return raw ? (JSON.parse(raw) as StoredSmtp) : undefined;
  }

  async get(): Promise<SmtpSettings> {
    const stored = await this.stored();
    return stored ? publicPart(stored) : SMTP_DEFAULTS;
  }

  async update(input: UpdateSmtpInput, ctx: { caller: Caller; req: RequestInfo }): Promise<SmtpSettings> {
    if (input.use_tls && input.use_ssl) throw fieldError('use_ssl', 'smtp.tls_and_ssl');
    const before = await this.get();
    const { password, ...rest } = input;
    const next: StoredSmtp = { ...rest, password_sealed: seal(this.encryptKey(), password) };
    await writeSettings(this.db, { [STORAGE_KEY]: JSON.stringify(next) });
    const after = publicPart(next);
    await this.audit.write({
      action: 'update',
      resource_type: 'smtp',
      actor: ctx.caller,
      req: ctx.req,
      details: { before, after },
    });
    return after;
  }

  /** Sends with the stored settings; failures become the 400/503 answers of docs/decisions.md "Mail, MFA and rate limits". */
  async send(mail: OutgoingMail): Promise<void> {
    const stored = await this.stored();
    if (!stored) throw new BadRequestError('smtp.not_configured');
    const password = open(this.encryptKey(), stored.password_sealed);
    if (password === undefined) throw new BadRequestError('smtp.key_mismatch');
    try {
      await sendMail(stored, password, mail, this.tls);
    } catch (error) {
      this.logger.warn({ smtp: mailErrorFields(error), host: stored.host, port: stored.port }, 'sending mail failed');
      throw mailError(error);
    }
  }
}
