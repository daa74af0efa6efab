import { z } from 'zod';
import { requirePermission, router } from '../common/trpc.ts';
import { noInput } from '../common/schemas.ts';

const tags = ['System settings'];
const settingsMap = z.record(z.string(), z.string()).meta({ id: 'SettingsMap' });

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
    // An object with a catchall (not a record) because trpc-to-openapi documents only object inputs.
    .input(z.object({}).catchall(z.union([z.string().max(4096), z.number(), z.boolean()]).transform(String)))
    .output(settingsMap)
    .mutation(async ({ ctx, input }) => {
      const { before, after } = await ctx.services.settings.update(input as Record<string, string>);
      // One record per key: resource_id stays a key name (it is filtered on and has a bounded width). The values
      // sit under before/after, not under the key's name, so the writer's secret-name masking leaves e.g.
      // password_min_length readable; secret settings are not writable here at all.
      for (const key of Object.keys(after).sort()) {
        await ctx.services.audit.write({
          action: 'update',
          resource_type: 'setting',
          resource_id: key,
          actor: ctx.caller,
          req: ctx.req,
          details: { before: before[key], after: after[key] },
        });
      }
      return ctx.services.settings.publicMap();
    }),
});
