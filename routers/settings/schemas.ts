import { z } from 'zod';

export const settingsMap = z.record(z.string(), z.string()).meta({ id: 'SettingsMap' });

// An object with a catchall (not a record) because trpc-to-openapi documents only object inputs.
export const updateSettingsInput = z
  .object({})
  .catchall(z.union([z.string().max(4096), z.number(), z.boolean()]).transform(String));

export const settingDefinitionSchema = z
  .object({
    key: z.string(),
    description: z.string(),
    type: z.enum(['integer', 'boolean', 'enum', 'string']),
    secret: z.boolean().meta({ description: 'Write-only: never answered, and its audit records carry no values' }),
    default: z.string().nullable().meta({ description: 'null for a secret' }),
    min: z.number().int().nullable().meta({ description: 'The least an `integer` setting takes; else null' }),
    max: z.number().int().nullable().meta({ description: 'The most an `integer` setting takes; else null' }),
    values: z.array(z.string()).nullable().meta({ description: 'The values an `enum` setting takes; else null' }),
  })
  .meta({ id: 'SettingDefinition' });
export type SettingDefinitionJson = z.infer<typeof settingDefinitionSchema>;

export const settingDefinitionsOutput = z.array(settingDefinitionSchema);
