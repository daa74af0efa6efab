import { translate } from '../../lib/messages/index.ts';
import { idParam, listOutput, messageOutput, searchInput } from '../common/schemas.ts';
import { authedProcedure, requirePermission, router } from '../common/trpc.ts';
import {
  createOrganizationInput,
  memberParams,
  organizationDetailSchema,
  organizationSchema,
  setMemberInput,
  updateOrganizationInput,
} from './schemas.ts';

const tags = ['Organizations'];

export const organizationsRouter = router({
  list: requirePermission('org:list')
    .meta({
      list: true,
      openapi: {
        method: 'GET',
        path: '/organizations',
        tags,
        summary: 'List organizations (search on name); with X-Scope-OrgID only that one',
        description: 'A page of organizations, newest first; `search` matches the name.',
      },
    })
    .input(searchInput)
    .output(listOutput(organizationSchema))
    .query(({ ctx, input }) => ctx.services.organizations.list(input, ctx.req.orgId)),

  mine: authedProcedure
    .meta({
      list: true,
      openapi: {
        method: 'GET',
        path: '/auth/me/organizations',
        tags,
        summary: 'The organizations the caller may act in (search on name), for choosing X-Scope-OrgID',
        description:
          'A page of the organizations the caller belongs to, newest first, disabled ones included (acting in one → 403 E4031); an administrator gets every organization. X-Scope-OrgID does not narrow it.',
      },
    })
    .input(searchInput)
    .output(listOutput(organizationSchema))
    .query(({ ctx, input }) => ctx.services.organizations.mine(input, ctx.caller)),

  get: requirePermission('org:view')
    .meta({
      openapi: {
        method: 'GET',
        path: '/organizations/{id}',
        tags,
        summary: 'Get an organization with its members and their roles in it',
        description:
          "One organization with each member and the member's roles in it. An unknown or deleted organization → 404 E4041.",
      },
    })
    .input(idParam)
    .output(organizationDetailSchema)
    .query(({ ctx, input }) => ctx.services.organizations.get(input.id, ctx.req.orgId)),

  create: requirePermission('org:create')
    .meta({
      successStatus: 201,
      openapi: {
        method: 'POST',
        path: '/organizations',
        tags,
        summary: 'Create an organization',
        description:
          'Creates an organization, answered with 201; roles and members are added afterwards. A taken name → 400 E4001.',
      },
    })
    .input(createOrganizationInput)
    .output(organizationDetailSchema)
    .mutation(({ ctx, input }) => ctx.services.organizations.create(input, { caller: ctx.caller, req: ctx.req })),

  update: requirePermission('org:update')
    .meta({
      openapi: {
        method: 'PUT',
        path: '/organizations/{id}',
        tags,
        summary: 'Update an organization (a disabled one grants its members nothing)',
        description:
          "Changes the fields given. While disabled, the organization's roles grant its members nothing and X-Scope-OrgID naming it → 403 E4031.",
      },
    })
    .input(updateOrganizationInput)
    .output(organizationDetailSchema)
    .mutation(({ ctx, input: { id, ...patch } }) =>
      ctx.services.organizations.update(id, patch, { caller: ctx.caller, req: ctx.req }),
    ),

  delete: requirePermission('org:delete')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/organizations/{id}',
        tags,
        summary: 'Delete an organization (soft); its memberships and roles are removed',
        description:
          'Marks the organization deleted and removes its memberships and roles; X-Scope-OrgID naming it then → 404 E4041.',
      },
    })
    .input(idParam)
    .output(messageOutput)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.organizations.remove(input.id, { caller: ctx.caller, req: ctx.req });
      return { message: translate('org.deleted', {}, ctx.req.locale) };
    }),

  setMember: requirePermission('org:member:update')
    .meta({
      openapi: {
        method: 'PUT',
        path: '/organizations/{id}/members',
        tags,
        summary: "Add a member, or replace a member's roles in the organization (roles of this organization only)",
        description:
          "Makes `user_id` a member holding exactly `role_ids` in the organization (roles of another organization or global roles → 400 E4001). Changing another user's membership needs every permission they hold (README, the privilege rule).",
      },
    })
    .input(setMemberInput)
    .output(organizationDetailSchema)
    .mutation(({ ctx, input }) =>
      ctx.services.organizations.setMember(input.id, input.user_id, input.role_ids, {
        caller: ctx.caller,
        req: ctx.req,
      }),
    ),

  removeMember: requirePermission('org:member:update')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/organizations/{id}/members/{userId}',
        tags,
        summary: 'Remove a member from the organization',
        description:
          "Ends the user's membership, and with it their roles in the organization. A user who is not a member → 404 E4041.",
      },
    })
    .input(memberParams)
    .output(messageOutput)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.organizations.removeMember(input.id, input.userId, { caller: ctx.caller, req: ctx.req });
      return { message: translate('org.member_removed', {}, ctx.req.locale) };
    }),
});
