import { translate } from '../../lib/messages/index.ts';
import { messageOutput, noInput } from '../common/schemas.ts';
import { adminProcedure, router } from '../common/trpc.ts';
import { smtpSettingsSchema, testSmtpInput, updateSmtpInput } from './schemas.ts';

const tags = ['System settings'];

export const smtpRouter = router({
  get: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/system/settings/smtp',
        tags,
        summary: 'SMTP settings without the password (admin only)',
        description:
          'The stored settings the service sends mail with (password reset, MFA codes). The password is never answered.',
      },
    })
    .input(noInput)
    .output(smtpSettingsSchema)
    .query(({ ctx }) => ctx.services.smtp.get()),

  update: adminProcedure
    .meta({
      openapi: {
        method: 'PUT',
        path: '/system/settings/smtp',
        tags,
        summary: 'Replace the SMTP settings; the password is stored encrypted (admin only)',
        description:
          'Replaces all SMTP settings; the password is encrypted at rest. `use_tls` and `use_ssl` exclude each other (400 E4001).',
      },
    })
    .input(updateSmtpInput)
    .output(smtpSettingsSchema)
    .mutation(({ ctx, input }) => ctx.services.smtp.update(input, { caller: ctx.caller, req: ctx.req })),

  test: adminProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/system/settings/smtp/test',
        tags,
        summary: 'Send a test email with the stored SMTP settings (admin only)',
        description:
          'Sends one message to `to` through the stored settings and answers once the SMTP server accepted it. No stored settings → 400 E4001.',
      },
    })
    .input(testSmtpInput)
    .output(messageOutput)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.smtp.send({ to: input.to, subject: input.subject, text: input.body });
      return { message: translate('smtp.test_sent', {}, ctx.req.locale) };
    }),
});
