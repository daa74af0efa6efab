import { translate } from '../../lib/messages/index.ts';
import { idParam, listOutput, messageOutput } from '../common/schemas.ts';
import { requirePermission, router } from '../common/trpc.ts';
import { createRoleInput, listRolesInput, roleSchema, updateRoleInput } from './schemas.ts';

const tags = ['Roles'];

export const rolesRouter = router({
  list: requirePermission('role:list')
    .meta({
      list: true,
      openapi: {
        method: 'GET',
        path: '/roles',
        tags,
        summary: "List roles (search on name); with X-Scope-OrgID only the global roles and that organization's",
        description:
          "A page of roles, newest first, each with its permission codes; `search` matches the name and `org_id` keeps one organization's roles.",
      },
    })
    .input(listRolesInput)
    .output(listOutput(roleSchema))
    .query(({ ctx, input }) => ctx.services.roles.list(input, ctx.req.orgId)),

  get: requirePermission('role:view')
    .meta({
      openapi: {
        method: 'GET',
        path: '/roles/{id}',
        tags,
        summary: 'Get a role',
        description:
          "One role with its permission codes. An unknown role, or with X-Scope-OrgID another organization's role → 404 E4041.",
      },
    })
    .input(idParam)
    .output(roleSchema)
    .query(({ ctx, input }) => ctx.services.roles.get(input.id, ctx.req.orgId)),

  create: requirePermission('role:create')
    .meta({
      successStatus: 201,
      openapi: {
        method: 'POST',
        path: '/roles',
        tags,
        summary: 'Create a role',
        description:
          'Creates a global role, or with `org_id` a role of that organization (holding only codes that act within one organization), answered with 201. The caller grants only permissions they hold; a taken name or an unknown code → 400 E4001.',
      },
    })
    .input(createRoleInput)
    .output(roleSchema)
    .mutation(({ ctx, input }) => ctx.services.roles.create(input, { caller: ctx.caller, req: ctx.req })),

  update: requirePermission('role:update')
    .meta({
      openapi: {
        method: 'PUT',
        path: '/roles/{id}',
        tags,
        summary: 'Update a role (permissions replace the set)',
        description:
          'Changes the fields given; `permissions` replaces the whole set. A change needs every permission the role carries; system roles are changed only by administrators, keep their names, and `admin` keeps every permission (400 E4001).',
      },
    })
    .input(updateRoleInput)
    .output(roleSchema)
    .mutation(({ ctx, input: { id, ...patch } }) =>
      ctx.services.roles.update(id, patch, { caller: ctx.caller, req: ctx.req }),
    ),

  delete: requirePermission('role:delete')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/roles/{id}',
        tags,
        summary: 'Delete a role that no user holds',
        description: 'Deletes the role. A system role, or one a user or member still holds → 400 E4001.',
      },
    })
    .input(idParam)
    .output(messageOutput)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.roles.remove(input.id, { caller: ctx.caller, req: ctx.req });
      return { message: translate('role.deleted', {}, ctx.req.locale) };
    }),
});
