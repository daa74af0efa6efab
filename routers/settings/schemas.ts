import { z } from 'zod';

export const settingsMap = z.record(z.string(), z.string()).meta({ id: 'SettingsMap' });

// An object with a catchall (not a record) because trpc-to-openapi documents only object inputs.
export const updateSettingsInput = z
  .object({})
  .catchall(z.union([z.string().max(4096), z.number(), z.boolean()]).transform(String));
