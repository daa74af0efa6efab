import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { translate, type MessageKey, type MessageParams } from '../../lib/messages/index.ts';

export type TemplateName = 'password_reset' | 'mfa_code' | 'welcome' | 'account_locked';

export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const fill = (template: string, params: MessageParams, encode: (s: string) => string = (s) => s) =>
  template.replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? encode(String(params[name])) : whole));

/** The built-in HTML body: the text's paragraphs, with links made clickable. */
function htmlOf(text: string): string {
  const paragraphs = text.split(/\n{2,}/).map(
    (p) =>
      `<p>${escapeHtml(p)
        .replace(/\n/g, '<br>')
        .replace(/(https?:\/\/[^\s<]+)/g, '<a href="$1">$1</a>')}</p>`,
  );
  return `<!doctype html>\n<html><body style="font-family:sans-serif;line-height:1.5">${paragraphs.join('\n')}</body></html>\n`;
}

/**
 * Subject, text and HTML of each system email, in the recipient's language. A file in `mail.template_path`
 * replaces one part: `<name>.<locale>.subject`, `<name>.<locale>.txt`, `<name>.<locale>.html`, or the same
 * without the locale for every language. Placeholders are `{username}`, `{service}`, `{link}`, `{code}`,
 * `{minutes}`, `{root_url}`; in HTML files their values are escaped.
 */
export class MailTemplates {
  constructor(
    private readonly folder: string,
    private readonly rootUrl: string,
  ) {}

  private override(name: TemplateName, locale: string, part: 'subject' | 'txt' | 'html'): string | undefined {
    if (!this.folder) return undefined;
    for (const file of [`${name}.${locale}.${part}`, `${name}.${part}`]) {
      const path = join(this.folder, file);
      if (existsSync(path)) return readFileSync(path, 'utf8');
    }
    return undefined;
  }

  /** `path` is appended to `server.root_url` to form `{link}`. */
  render(name: TemplateName, locale: string, params: MessageParams & { path?: string }): RenderedMail {
    const { path = '/', ...rest } = params;
    const all: MessageParams = {
      service: translate('mail.service_name', {}, locale),
      root_url: this.rootUrl,
      link: `${this.rootUrl.replace(/\/$/, '')}${path}`,
      ...rest,
    };
    const subject = fill(
      this.override(name, locale, 'subject') ?? translate(`mail.${name}.subject` as MessageKey, {}, locale),
      all,
    ).trim();
    const text = fill(
      this.override(name, locale, 'txt') ?? translate(`mail.${name}.text` as MessageKey, {}, locale),
      all,
    );
    const html = this.override(name, locale, 'html');
    return { subject, text, html: html === undefined ? htmlOf(text) : fill(html, all, escapeHtml) };
  }
}
