import { translate } from '../../lib/messages/index.ts';
import { messageOutput, noInput } from '../shared/schemas.ts';
import { adminProcedure, router } from '../shared/trpc.ts';
import { smtpSettingsSchema, testSmtpInput, updateSmtpInput } from './schemas.ts';

const tags = ['System settings'];

export const smtpRouter = router({
  get: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/system/settings/smtp', tags, summary: 'SMTP settings without the password (admin only)' } })
    .input(noInput)
    .output(smtpSettingsSchema)
    .query(({ ctx }) => ctx.services.smtp.get()),

  update: adminProcedure
    .meta({ openapi: { method: 'PUT', path: '/system/settings/smtp', tags, summary: 'Replace the SMTP settings; the password is stored encrypted (admin only)' } })
    .input(updateSmtpInput)
    .output(smtpSettingsSchema)
    .mutation(({ ctx, input }) => ctx.services.smtp.update(input, { caller: ctx.caller, req: ctx.req })),

  test: adminProcedure
    .meta({ openapi: { method: 'POST', path: '/system/settings/smtp/test', tags, summary: 'Send a test email with the stored SMTP settings (admin only)' } })
    .input(testSmtpInput)
    .output(messageOutput)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.smtp.send({ to: input.to, subject: input.subject, text: input.body });
      return { message: translate('smtp.test_sent', {}, ctx.req.locale) };
    }),
});
