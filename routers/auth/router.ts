import { translate } from '../../lib/messages/index.ts';
import { messageOutput, noInput } from '../common/schemas.ts';
import { authedProcedure, publicProcedure, router } from '../common/trpc.ts';
import {
  changePasswordInput,
  confirmPasswordResetInput,
  currentUserSchema,
  loginInput,
  loginOutput,
  requestPasswordResetInput,
  tokenSchema,
  updateMeInput,
} from './schemas.ts';
import { userSchema } from '../users/schemas.ts';

const tags = ['Authentication'];

export const authRouter = router({
  login: publicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/login',
        tags,
        summary:
          'Log in with username (or email) and password; with MFA by email, finish with mfa_token and the mailed mfa_code',
        description:
          'Answers a token for the `Authorization: Bearer` header, its expiry and the user. A user with MFA first gets `{mfa_required, mfa_token}` and an emailed code; a second call with `mfa_token` and `mfa_code` completes the login. Wrong credentials → 401 E4011; consecutive failures lock the account for a while (settings `login_failure_attempts`, `login_failure_lockout_minutes`), and during a lock every password gets that same answer, none checked; a disabled account is reported only after a correct password. Limited per client network and account, the username and the email of one account counting together (`rate_limit.login_per_minute`); too many logins at once from one network → 429 E4291.',
      },
    })
    .input(loginInput)
    .output(loginOutput)
    .mutation(({ ctx, input }) => ctx.services.auth.loginWith(input, ctx.req)),

  requestPasswordReset: publicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/password-reset/request',
        tags,
        summary: 'Email a password reset link (same answer whether or not the address is known)',
        description:
          'Mails a single-use link to reset the password of the user with this address, at most 3 per address in 30 minutes. The answer is the same, and comes before the address is looked up, whether or not such a user exists, so it does not reveal accounts.',
      },
    })
    .input(requestPasswordResetInput)
    .output(messageOutput)
    .mutation(({ ctx, input }) => {
      ctx.services.passwordReset.request(input.email);
      return { message: translate('auth.reset_requested', {}, ctx.req.locale) };
    }),

  confirmPasswordReset: publicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/password-reset/confirm',
        tags,
        summary: 'Set a new password with the emailed single-use token (ends every session)',
        description:
          "Sets the password of the user the mailed token was made for and ends all of that user's sessions. An unknown, used or expired token → 400 E4001.",
      },
    })
    .input(confirmPasswordResetInput)
    .output(messageOutput)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.passwordReset.confirm(input.token, input.password, ctx.req);
      return { message: translate('auth.password_reset', {}, ctx.req.locale) };
    }),

  me: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/auth/me',
        tags,
        summary: 'The current user with roles and permissions',
        description:
          "Answers the caller's own record, their global roles with each role's permission codes, and the permission codes they hold; with `X-Scope-OrgID`, those their roles in that organization grant are included (what they may do acting in it).",
      },
    })
    .input(noInput)
    .output(currentUserSchema)
    .query(({ ctx }) => ctx.services.users.me(ctx.caller, () => ctx.services.permissions.codes())),

  updateMe: authedProcedure
    .meta({
      openapi: {
        method: 'PUT',
        path: '/auth/me',
        tags,
        summary: 'Change your own full name, email or MFA (email and MFA need your password)',
        description:
          "Changes the caller's own fields given, without the user:update permission. A new email or turning MFA (codes by email at login) on or off needs the current `password` (missing or wrong → 400 E4001). Written to the audit log as a user update.",
      },
    })
    .input(updateMeInput)
    .output(userSchema)
    .mutation(({ ctx, input }) => ctx.services.users.updateOwn(input, { caller: ctx.caller, req: ctx.req })),

  logout: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/logout',
        tags,
        summary: 'End this session',
        description:
          "Ends the session the token belongs to: the token then answers 401 E4011. The user's other sessions go on.",
      },
    })
    .input(noInput)
    .output(messageOutput)
    .mutation(async ({ ctx }) => {
      await ctx.services.auth.logout(ctx.caller, ctx.req);
      return { message: translate('auth.logged_out', {}, ctx.req.locale) };
    }),

  refresh: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/refresh',
        tags,
        summary: 'A new token for the same session',
        description:
          "Answers a new token and its expiry for the session the current token belongs to, so a client can go on past the first token's expiry without logging in again.",
      },
    })
    .input(noInput)
    .output(tokenSchema)
    .mutation(({ ctx }) => ctx.services.auth.refresh(ctx.caller)),

  changePassword: authedProcedure
    .meta({
      openapi: {
        method: 'PUT',
        path: '/auth/me/password',
        tags,
        summary: 'Change your own password (ends your sessions)',
        description:
          "Changes the caller's password once the old one is confirmed (a wrong one → 400 E4001) and ends all of the caller's sessions: log in again with the new password.",
      },
    })
    .input(changePasswordInput)
    .output(messageOutput)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.users.changeOwnPassword(input.old_password, input.new_password, {
        caller: ctx.caller,
        req: ctx.req,
      });
      return { message: translate('auth.password_changed', {}, ctx.req.locale) };
    }),
});
