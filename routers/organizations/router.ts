import { translate } from '../../lib/messages/index.ts';
import { idParam, listOutput, messageOutput, searchInput } from '../shared/schemas.ts';
import { requirePermission, router } from '../shared/trpc.ts';
import { createOrganizationInput, memberParams, organizationDetailSchema, organizationSchema, setMemberInput, updateOrganizationInput } from './schemas.ts';

const tags = ['Organizations'];

export const organizationsRouter = router({
  list: requirePermission('org:list')
    .meta({ list: true, openapi: { method: 'GET', path: '/organizations', tags, summary: 'List organizations (search on name); with X-Scope-OrgID only that one' } })
    .input(searchInput)
    .output(listOutput(organizationSchema))
    .query(({ ctx, input }) => ctx.services.organizations.list(input, ctx.req.orgId)),

  get: requirePermission('org:view')
    .meta({ openapi: { method: 'GET', path: '/organizations/{id}', tags, summary: 'Get an organization with its members and their roles in it' } })
    .input(idParam)
    .output(organizationDetailSchema)
    .query(({ ctx, input }) => ctx.services.organizations.get(input.id, ctx.req.orgId)),

  create: requirePermission('org:create')
    .meta({ successStatus: 201, openapi: { method: 'POST', path: '/organizations', tags, summary: 'Create an organization' } })
    .input(createOrganizationInput)
    .output(organizationDetailSchema)
    .mutation(({ ctx, input }) => ctx.services.organizations.create(input, { caller: ctx.caller, req: ctx.req })),

  update: requirePermission('org:update')
    .meta({ openapi: { method: 'PUT', path: '/organizations/{id}', tags, summary: 'Update an organization (a disabled one grants its members nothing)' } })
    .input(updateOrganizationInput)
    .output(organizationDetailSchema)
    .mutation(({ ctx, input: { id, ...patch } }) => ctx.services.organizations.update(id, patch, { caller: ctx.caller, req: ctx.req })),

  delete: requirePermission('org:delete')
    .meta({ openapi: { method: 'DELETE', path: '/organizations/{id}', tags, summary: 'Delete an organization (soft); its memberships and roles are removed' } })
    .input(idParam)
    .output(messageOutput)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.organizations.remove(input.id, { caller: ctx.caller, req: ctx.req });
      return { message: translate('org.deleted', {}, ctx.req.locale) };
    }),

  setMember: requirePermission('org:member:update')
    .meta({ openapi: { method: 'PUT', path: '/organizations/{id}/members', tags, summary: "Add a member, or replace a member's roles in the organization (roles of this organization only)" } })
    .input(setMemberInput)
    .output(organizationDetailSchema)
    .mutation(({ ctx, input }) => ctx.services.organizations.setMember(input.id, input.user_id, input.role_ids, { caller: ctx.caller, req: ctx.req })),

  removeMember: requirePermission('org:member:update')
    .meta({ openapi: { method: 'DELETE', path: '/organizations/{id}/members/{userId}', tags, summary: 'Remove a member from the organization' } })
    .input(memberParams)
    .output(messageOutput)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.organizations.removeMember(input.id, input.userId, { caller: ctx.caller, req: ctx.req });
      return { message: translate('org.member_removed', {}, ctx.req.locale) };
    }),
});
