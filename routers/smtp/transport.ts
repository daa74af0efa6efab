import { isIP } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import { BadRequestError, UnavailableError, type AppError } from '../../lib/errors.ts';
import type { SmtpSettings } from './schemas.ts';

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

/** A bounded wait: a silent server answers 503 within seconds, not after the OS connect timeout. */
const TIMEOUT_MS = 10_000;

/** Sends one message with these settings: `use_ssl` implicit TLS, `use_tls` STARTTLS (required), else plain. */
export async function sendMail(
  settings: SmtpSettings,
  password: string,
  mail: OutgoingMail,
  tls: ConnectionOptions = {},
): Promise<void> {
  // Loaded on the first send: most installs send rarely or never, and the module costs megabytes of idle memory.
  const { default: nodemailer } = await import('nodemailer');
  const transport = nodemailer.createTransport({
    host: settings.host,
    port: settings.port,
    secure: settings.use_ssl,
    requireTLS: settings.use_tls,
    ignoreTLS: !settings.use_tls && !settings.use_ssl,
    auth: settings.username ? { user: settings.username, pass: password } : undefined,
    connectionTimeout: TIMEOUT_MS,
    greetingTimeout: TIMEOUT_MS,
    socketTimeout: TIMEOUT_MS,
    // SNI carries names only (RFC 6066).
    tls: { ...(isIP(settings.host) ? {} : { servername: settings.host }), ...tls },
  });
  try {
    await transport.sendMail({ from: { name: settings.from_name, address: settings.from_email }, ...mail });
  } finally {
    transport.close();
  }
}

const UNREACHABLE = new Set([
  'ECONNECTION',
  'ESOCKET',
  'ETIMEDOUT',
  'EDNS',
  'ETLS',
  'EPROTOCOL',
  'ECONNREFUSED',
  'ENOTFOUND',
]);

/**
 * A send failure as the answer docs/decisions.md "Mail, MFA and rate limits" asks for: refused credentials or addresses are the caller's to fix
 * (400), an unreachable server is not (503). The reason is a fixed text: server replies and socket errors
 * stay in the log.
 */
export function mailError(error: unknown): AppError {
  const code = (error as { code?: string }).code ?? '';
  if (code === 'EAUTH') return new BadRequestError('smtp.auth_failed');
  if (code === 'EENVELOPE') return new BadRequestError('smtp.recipient_refused');
  if (UNREACHABLE.has(code)) return new UnavailableError('smtp.unreachable');
  return new UnavailableError('smtp.send_failed');
}

/** The loggable part of a send failure: codes only, never the command (AUTH lines carry credentials). */
export function mailErrorFields(error: unknown): Record<string, unknown> {
  const e = error as { code?: string; responseCode?: number };
  return { code: e.code, response_code: e.responseCode };
}
