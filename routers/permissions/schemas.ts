import { z } from 'zod';

export const permissionSchema = z
  .object({
    code: z.string().regex(/^[a-z0-9_]+(:[a-z0-9_]+){1,2}$/, 'must look like resource:action'),
    name: z.string().min(1),
    module: z.string().min(1),
  })
  .meta({ id: 'Permission' });
export type Permission = z.infer<typeof permissionSchema>;
export const permissionList = z.array(permissionSchema);

export const listPermissionsInput = z
  .object({
    scope: z.enum(['organization']).optional().meta({
      description: "With `organization`, only the codes an organization's role may hold (those that act within one)",
    }),
  })
  .optional();
