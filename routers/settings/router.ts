import { requirePermission, router } from '../common/trpc.ts';
import { noInput } from '../common/schemas.ts';
import { settingsMap, updateSettingsInput } from './schemas.ts';

const tags = ['System settings'];

export const settingsRouter = router({
  get: requirePermission('system:settings:view')
    .meta({
      openapi: {
        method: 'GET',
        path: '/system/settings',
        tags,
        summary: 'Every non-secret setting, values as strings',
        description: "A map of every setting's key to its current value as a string. Secret settings are left out.",
      },
    })
    .input(noInput)
    .output(settingsMap)
    .query(({ ctx }) => ctx.services.settings.publicMap()),

  update: requirePermission('system:settings:update')
    .meta({
      openapi: {
        method: 'PUT',
        path: '/system/settings',
        tags,
        summary: 'Change some settings (all or nothing); answers the whole map',
        description:
          'Takes a map of keys to new values. Every value is checked first: an unknown or secret key, or an invalid value → 400 E4001 naming it, and nothing is stored. Each changed key is written to the audit log.',
      },
    })
    .input(updateSettingsInput)
    .output(settingsMap)
    .mutation(({ ctx, input }) => ctx.services.settings.update(input, { caller: ctx.caller, req: ctx.req })),
});
