import { loginOutput } from '../auth/schemas.ts';
import { publicProcedure, router } from '../common/trpc.ts';
import { oauthCallbackInput, providerList } from './schemas.ts';
import { noInput } from '../common/schemas.ts';

const tags = ['Authentication'];

// `GET /auth/oauth/{name}/authorize` and the browser's `GET .../callback` answer redirects, so they are plain
// Fastify routes (server/http/oauth-routes.ts) calling the same service; these two are JSON.
export const oauthRouter = router({
  providers: publicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/auth/oauth/providers',
        tags,
        summary: 'The OAuth providers a login page can offer (none while oauth.enabled is false)',
        description:
          'Each configured provider a login page can offer a button for, starting at GET /auth/oauth/{name}/authorize. An empty list while `oauth.enabled` is false.',
      },
    })
    .input(noInput)
    .output(providerList)
    .query(({ ctx }) => ctx.services.oauth.list()),

  callback: publicProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/auth/oauth/{name}/callback',
        tags,
        summary:
          'Finish an OAuth login from a single-page app: post the code and state the provider sent to redirect_url; answers as POST /auth/login (the MFA challenge for an account with MFA)',
        description:
          "For a single-page app that receives the provider's redirect itself: checks the signed state, exchanges the code with the provider and logs the matching account in (README, OAuth login). An account with MFA gets `{mfa_required, mfa_token}` and a mailed code, as from POST /auth/login, which then completes the login with `mfa_token` and `mfa_code`. A bad state → 400 E4001; a refused login, no account for it, or an existing account it may not be linked to → 401 E4011; the provider unreachable → 503 E5031.",
      },
    })
    .input(oauthCallbackInput)
    .output(loginOutput)
    .mutation(({ ctx, input }) => {
      const { name, ...params } = input;
      return ctx.services.oauth.callback(name, params, ctx.req);
    }),
});
