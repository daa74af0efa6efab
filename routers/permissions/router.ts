import { z } from 'zod';
import { requirePermission, router } from '../shared/trpc.ts';
import { permissionSchema } from './catalogue.ts';

export const permissionsRouter = router({
  list: requirePermission('permission:list')
    .meta({ openapi: { method: 'GET', path: '/permissions', tags: ['Permissions'], summary: 'The permission catalogue' } })
    .input(z.object({}))
    .output(z.array(permissionSchema))
    .query(({ ctx }) => ctx.services.permissions.list()),
});
