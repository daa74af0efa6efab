import { requirePermission, router } from '../common/trpc.ts';
import { permissionList } from './schemas.ts';
import { noInput } from '../common/schemas.ts';

export const permissionsRouter = router({
  list: requirePermission('permission:list')
    .meta({
      openapi: {
        method: 'GET',
        path: '/permissions',
        tags: ['Permissions'],
        summary: 'The permission catalogue',
        description:
          'Every permission code a role can hold, with its name and module, as declared in the code (not editable).',
      },
    })
    .input(noInput)
    .output(permissionList)
    .query(({ ctx }) => ctx.services.permissions.list()),
});
