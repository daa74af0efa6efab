import { requirePermission, router } from '../common/trpc.ts';
import { listPermissionsInput, permissionList } from './schemas.ts';

export const permissionsRouter = router({
  list: requirePermission('permission:list')
    .meta({
      openapi: {
        method: 'GET',
        path: '/permissions',
        tags: ['Permissions'],
        summary: 'The permission catalogue',
        description:
          "Every permission code a role can hold, with its name and module, as declared in the code (not editable); `scope=organization` keeps those an organization's role may hold.",
      },
    })
    .input(listPermissionsInput)
    .output(permissionList)
    .query(({ ctx, input }) => ctx.services.permissions.list(input?.scope === 'organization')),
});
