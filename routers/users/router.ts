import { requirePermission, router } from '../common/trpc.ts';
import { idParam, listOutput, messageOutput } from '../common/schemas.ts';
import { translate } from '../../lib/messages/index.ts';
import { createUserInput, listUsersInput, setPasswordInput, updateUserInput, userSchema } from './schemas.ts';

const tags = ['Users'];

export const usersRouter = router({
  list: requirePermission('user:list')
    .meta({
      list: true,
      openapi: {
        method: 'GET',
        path: '/users',
        tags,
        summary: 'List users (search on username and email)',
        description:
          'A page of users, newest first, each with their global roles; `search` keeps those whose username or email contains it. Deleted users are not listed.',
      },
    })
    .input(listUsersInput)
    .output(listOutput(userSchema))
    .query(({ ctx, input }) => ctx.services.users.list(input)),

  get: requirePermission('user:view')
    .meta({
      openapi: {
        method: 'GET',
        path: '/users/{id}',
        tags,
        summary: 'Get a user',
        description: 'One user with their global roles. An unknown or deleted user → 404 E4041.',
      },
    })
    .input(idParam)
    .output(userSchema)
    .query(({ ctx, input }) => ctx.services.users.get(input.id)),

  create: requirePermission('user:create')
    .meta({
      successStatus: 201,
      openapi: {
        method: 'POST',
        path: '/users',
        tags,
        summary: 'Create a user',
        description:
          'Creates a user with a password and global roles, answered with 201. A taken username or email → 400 E4001; only roles whose permissions the caller holds may be given, and only administrators give `admin` (403 E4031). Written to the audit log.',
      },
    })
    .input(createUserInput)
    .output(userSchema)
    .mutation(({ ctx, input }) => ctx.services.users.create(input, { caller: ctx.caller, req: ctx.req })),

  update: requirePermission('user:update')
    .meta({
      openapi: {
        method: 'PUT',
        path: '/users/{id}',
        tags,
        summary: 'Update a user (disabling ends their sessions)',
        description:
          "Changes the fields given. Changing another user needs every permission they hold (README, the privilege rule); nobody disables themselves or the last active administrator (400 E4001). Disabling ends the user's sessions. Written to the audit log with the record before and after.",
      },
    })
    .input(updateUserInput)
    .output(userSchema)
    .mutation(({ ctx, input: { id, ...patch } }) =>
      ctx.services.users.update(id, patch, { caller: ctx.caller, req: ctx.req }),
    ),

  delete: requirePermission('user:delete')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/users/{id}',
        tags,
        summary: 'Delete a user (soft)',
        description:
          'Marks the user deleted (the row stays, so audit records keep naming them) and ends their sessions. Nobody deletes themselves or the last active administrator (400 E4001).',
      },
    })
    .input(idParam)
    .output(messageOutput)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.users.remove(input.id, { caller: ctx.caller, req: ctx.req });
      return { message: translate('user.deleted', {}, ctx.req.locale) };
    }),

  setPassword: requirePermission('user:update')
    .meta({
      openapi: {
        method: 'PUT',
        path: '/users/{id}/password',
        tags,
        summary: "Set a user's password (ends their sessions)",
        description:
          "Sets a new password without the old one, as an administrator's reset, and ends all of the user's sessions. Needs every permission the user holds (README, the privilege rule).",
      },
    })
    .input(setPasswordInput)
    .output(userSchema)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.users.setPassword(input.id, input.password, 'password_reset', {
        caller: ctx.caller,
        req: ctx.req,
      });
      return ctx.services.users.get(input.id);
    }),

  unlock: requirePermission('user:update')
    .meta({
      openapi: {
        method: 'POST',
        path: '/users/{id}/unlock',
        tags,
        summary: 'Unlock a locked account',
        description:
          'Lifts the lock that consecutive failed logins put on an account, so the user can log in again at once. Needs every permission the user holds (README, the privilege rule).',
      },
    })
    .input(idParam)
    .output(userSchema)
    .mutation(({ ctx, input }) => ctx.services.users.unlock(input.id, { caller: ctx.caller, req: ctx.req })),
});
