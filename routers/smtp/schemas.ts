import { z } from 'zod';

export const smtpSettingsSchema = z
  .object({
    host: z.string(),
    port: z.number().int(),
    username: z.string(),
    from_email: z.string(),
    from_name: z.string(),
    use_tls: z.boolean(),
    use_ssl: z.boolean(),
  })
  .meta({ id: 'SmtpSettings' });
export type SmtpSettings = z.infer<typeof smtpSettingsSchema>;

export const updateSmtpInput = z.object({
  host: z.string().min(1).max(255),
  port: z.number().int().min(1).max(65535),
  // Empty: the server is used without AUTH (docs/decisions.md "Mail, MFA and rate limits").
  username: z.string().max(255).default(''),
  password: z.string().min(1).max(1024),
  from_email: z.email().max(255),
  from_name: z.string().max(255).default(''),
  use_tls: z.boolean().default(true),
  use_ssl: z.boolean().default(false),
});
export type UpdateSmtpInput = z.infer<typeof updateSmtpInput>;

export const testSmtpInput = z.object({
  to: z.email().max(255),
  subject: z.string().min(1).max(255),
  body: z.string().min(1).max(100_000),
});

/** What is stored: the answer's fields plus the sealed password. */
export interface StoredSmtp extends SmtpSettings {
  password_sealed: string;
}

export const SMTP_DEFAULTS: SmtpSettings = {
  host: '',
  port: 587,
  username: '',
  from_email: '',
  from_name: '',
  use_tls: true,
  use_ssl: false,
};
