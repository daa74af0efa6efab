import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { AppError } from '../../lib/errors.ts';
import type { MessageParams } from '../../lib/messages/index.ts';
import type { SmtpService } from '../smtp/service.ts';
import type { MailTemplates, TemplateName } from './templates.ts';

export interface Recipient {
  email: string;
  username: string;
  /** The user's stored locale: system emails go out after (or outside) the request that caused them. */
  locale: string;
}

/**
 * System emails. Sending never holds up the HTTP answer that triggered it: each message is sent in the
 * background; a failure is logged (without the message) and counted in `mail_sent_total{result="failed"}`.
 */
export class Mailer {
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly smtp: SmtpService,
    private readonly templates: MailTemplates,
    private readonly counter: Counter<'template' | 'result'>,
    private readonly logger: Logger,
  ) {}

  send(to: Recipient, template: TemplateName, params: MessageParams & { path?: string }): void {
    this.track(template, async () => {
      await this.deliver(to, template, params);
      return true;
    });
  }

  /**
   * Sends the mail `find` comes up with, if any, all in the background: the request that asked answers before
   * the lookup, so its timing tells nothing of what was found.
   */
  sendFound(
    template: TemplateName,
    find: () => Promise<{ to: Recipient; params: MessageParams & { path?: string } } | undefined>,
  ): void {
    this.track(template, async () => {
      const found = await find();
      if (found) await this.deliver(found.to, template, found.params);
      return found !== undefined;
    });
  }

  private async deliver(to: Recipient, template: TemplateName, params: MessageParams & { path?: string }) {
    const mail = this.templates.render(template, to.locale, { username: to.username, ...params });
    await this.smtp.send({ to: to.email, ...mail });
  }

  /** Runs a send in the background: counted when it sent something, logged (without the message) when it failed. */
  private track(template: TemplateName, send: () => Promise<boolean>): void {
    const job = send().then(
      (sent) => void (sent && this.counter.inc({ template, result: 'sent' })),
      (error: unknown) => {
        this.counter.inc({ template, result: 'failed' });
        this.logger.warn(
          { template, reason: error instanceof AppError ? error.key : 'error' },
          'system email not sent',
        );
      },
    );
    this.pending.add(job);
    void job.finally(() => this.pending.delete(job));
  }

  /** Resolves once every message started so far was sent or given up (shutdown and tests wait on it). */
  async idle(): Promise<void> {
    await Promise.all([...this.pending]);
  }
}
