import { z } from 'zod';
import { translate } from '../../lib/messages/index.ts';
import { messageOutput } from '../shared/schemas.ts';
import { authedProcedure, publicProcedure, router } from '../shared/trpc.ts';
import { userSchema } from '../users/schemas.ts';

const tags = ['Authentication'];

const meSchema = userSchema
  .extend({
    permissions: z.array(z.string()),
    roles: z.array(z.object({ id: z.string(), name: z.string(), permissions: z.array(z.string()) })),
  })
  .meta({ id: 'CurrentUser' });

const tokenSchema = z.object({ token: z.string(), expires_at: z.string() });

export const authRouter = router({
  login: publicProcedure
    .meta({ openapi: { method: 'POST', path: '/auth/login', tags, summary: 'Log in with username (or email) and password' } })
    .input(z.object({ username: z.string().min(1).max(255), password: z.string().min(1).max(1024) }))
    .output(tokenSchema.extend({ user: userSchema }))
    .mutation(({ ctx, input }) => ctx.services.auth.login(input.username, input.password, ctx.req)),

  me: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/auth/me', tags, summary: 'The current user with roles and permissions' } })
    .input(z.object({}))
    .output(meSchema)
    .query(async ({ ctx }) => {
      const me = await ctx.services.users.me(ctx.caller);
      // Administrators hold every permission, including ones registered after their role was seeded.
      return ctx.caller.isAdmin ? { ...me, permissions: ctx.services.permissions.list().map((p) => p.code).sort() } : me;
    }),

  logout: authedProcedure
    .meta({ openapi: { method: 'POST', path: '/auth/logout', tags, summary: 'End this session' } })
    .input(z.object({}))
    .output(messageOutput)
    .mutation(async ({ ctx }) => {
      await ctx.services.auth.logout(ctx.caller, ctx.req);
      return { message: translate('auth.logged_out', {}, ctx.req.locale) };
    }),

  refresh: authedProcedure
    .meta({ openapi: { method: 'POST', path: '/auth/refresh', tags, summary: 'A new token for the same session' } })
    .input(z.object({}))
    .output(tokenSchema)
    .mutation(({ ctx }) => ctx.services.auth.refresh(ctx.caller)),

  changePassword: authedProcedure
    .meta({ openapi: { method: 'PUT', path: '/auth/me/password', tags, summary: 'Change your own password (ends your sessions)' } })
    .input(z.object({ old_password: z.string().min(1).max(1024), new_password: z.string().min(1).max(128) }))
    .output(messageOutput)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.users.changeOwnPassword(input.old_password, input.new_password, { caller: ctx.caller, req: ctx.req });
      return { message: translate('auth.password_changed', {}, ctx.req.locale) };
    }),
});
