import { requirePermission, router } from '../shared/trpc.ts';
import { idParam, listOutput, messageOutput } from '../shared/schemas.ts';
import { translate } from '../../lib/messages/index.ts';
import { createUserInput, listUsersInput, setPasswordInput, updateUserInput, userSchema } from './schemas.ts';

const tags = ['Users'];

export const usersRouter = router({
  list: requirePermission('user:list')
    .meta({ list: true, openapi: { method: 'GET', path: '/users', tags, summary: 'List users (search on username and email)' } })
    .input(listUsersInput)
    .output(listOutput(userSchema))
    .query(({ ctx, input }) => ctx.services.users.list(input)),

  get: requirePermission('user:view')
    .meta({ openapi: { method: 'GET', path: '/users/{id}', tags, summary: 'Get a user' } })
    .input(idParam)
    .output(userSchema)
    .query(({ ctx, input }) => ctx.services.users.get(input.id)),

  create: requirePermission('user:create')
    .meta({ successStatus: 201, openapi: { method: 'POST', path: '/users', tags, summary: 'Create a user' } })
    .input(createUserInput)
    .output(userSchema)
    .mutation(({ ctx, input }) => ctx.services.users.create(input, { caller: ctx.caller, req: ctx.req })),

  update: requirePermission('user:update')
    .meta({ openapi: { method: 'PUT', path: '/users/{id}', tags, summary: 'Update a user (disabling ends their sessions)' } })
    .input(updateUserInput)
    .output(userSchema)
    .mutation(({ ctx, input: { id, ...patch } }) => ctx.services.users.update(id, patch, { caller: ctx.caller, req: ctx.req })),

  delete: requirePermission('user:delete')
    .meta({ openapi: { method: 'DELETE', path: '/users/{id}', tags, summary: 'Delete a user (soft)' } })
    .input(idParam)
    .output(messageOutput)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.users.remove(input.id, { caller: ctx.caller, req: ctx.req });
      return { message: translate('user.deleted', {}, ctx.req.locale) };
    }),

  setPassword: requirePermission('user:update')
    .meta({ openapi: { method: 'PUT', path: '/users/{id}/password', tags, summary: "Set a user's password (ends their sessions)" } })
    .input(setPasswordInput)
    .output(userSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.users.setPassword(input.id, input.password, 'password_reset', { caller: ctx.caller, req: ctx.req });
      return ctx.services.users.get(input.id);
    }),

  unlock: requirePermission('user:update')
    .meta({ openapi: { method: 'POST', path: '/users/{id}/unlock', tags, summary: 'Unlock a locked account' } })
    .input(idParam)
    .output(userSchema)
    .mutation(({ ctx, input }) => ctx.services.users.unlock(input.id, { caller: ctx.caller, req: ctx.req })),
});

