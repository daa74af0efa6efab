import { requirePermission, router } from '../common/trpc.ts';
import { noInput } from '../common/schemas.ts';
import { settingDefinitionsOutput, settingsMap, updateSettingsInput } from './schemas.ts';

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

  definitions: requirePermission('system:settings:view')
    .meta({
      openapi: {
        method: 'GET',
        path: '/system/settings/definitions',
        tags,
        summary: 'Every setting with its type, description and default, for a form that edits them',
        description:
          'Each declared setting: `type` (`integer` with `min`/`max`, `boolean`, `enum` with its `values`, or `string`), its description and default. A `secret` setting is write-only: `PUT /system/settings` takes it, no answer tells it (nor its default).',
      },
    })
    .input(noInput)
    .output(settingDefinitionsOutput)
    .query(({ ctx }) => ctx.services.settings.definitions()),

  update: requirePermission('system:settings:update')
    .meta({
      openapi: {
        method: 'PUT',
        path: '/system/settings',
        tags,
        summary: 'Change some settings (all or nothing); answers the whole map',
        description:
          'Takes a map of keys to new values. Every value is checked first: an unknown key or an invalid value → 400 E4001 naming it, and nothing is stored. Each changed key is written to the audit log.',
      },
    })
    .input(updateSettingsInput)
    .output(settingsMap)
    .mutation(({ ctx, input }) => ctx.services.settings.update(input, { caller: ctx.caller, req: ctx.req })),
});
