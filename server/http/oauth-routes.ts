import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BadRequestError } from '../../lib/errors.ts';
import { sameSecret } from '../../lib/same-secret.ts';
import { callbackParams } from '../../routers/oauth/schemas.ts';
import type { Services } from '../../routers/common/services.ts';
import { envelopeOf, errorResponse } from './openapi-parts.ts';
import { requestInfo } from './request-info.ts';

const COOKIE = 'console_oauth_state';
const digest = (state: string) => createHash('sha256').update(state).digest('base64url');

/**
 * Binds a login to the browser that started it: authorize leaves a cookie with the state's digest, and the GET
 * callback (where the browser lands) goes on only when it carries the same one. Without it, a code and state made
 * for someone's own provider account and opened in another browser would log that browser in as them (login
 * CSRF). The POST callback answers its caller itself, so a forged one only gives the forger their own token.
 */
function bindToBrowser(request: FastifyRequest, reply: FastifyReply, providerUrl: string): void {
  const state = new URL(providerUrl).searchParams.get('state') ?? '';
  const secure = request.protocol === 'https' ? '; Secure' : '';
  // No Path: the browser's default, the provider's folder of the authorize URL, holds its callback whatever
  // path prefix a proxy serves the API under.
  reply.header('set-cookie', `${COOKIE}=${digest(state)}; Max-Age=600; HttpOnly; SameSite=Lax${secure}`);
}

function assertSameBrowser(request: FastifyRequest, reply: FastifyReply, state: string): void {
  const sent = /(?:^|;\s*)console_oauth_state=([\w-]+)/.exec(request.headers.cookie ?? '')?.[1] ?? '';
  if (!sameSecret(sent, digest(state))) throw new BadRequestError('oauth.state_other_browser');
  reply.header('set-cookie', `${COOKIE}=; Max-Age=0; HttpOnly; SameSite=Lax`);
}

/**
 * The two OAuth steps a browser walks through, which answer redirects: tRPC procedures answer JSON only, so
 * these are plain Fastify routes calling the OAuth service (the JSON steps are procedures in routers/oauth).
 * Registered inside the /api scope, so failures answer with the error envelope.
 */
export function registerOAuthRoutes(api: FastifyInstance, services: Services): void {
  api.get('/auth/oauth/:name/authorize', async (request, reply) => {
    const { name } = request.params as { name: string };
    const providerUrl = await services.oauth.authorize(name);
    bindToBrowser(request, reply, providerUrl);
    return reply.header('cache-control', 'no-store').redirect(providerUrl, 302);
  });

  api.get('/auth/oauth/:name/callback', async (request, reply) => {
    const { name } = request.params as { name: string };
    const params = callbackParams.parse(request.query);
    // An unknown provider or OAuth turned off answers 404 whatever the browser carries.
    services.oauth.provider(name);
    assertSameBrowser(request, reply, params.state);
    const result = await services.oauth.callback(name, params, requestInfo(request));
    reply.header('cache-control', 'no-store');
    const landing = services.oauth.landingUrl(result);
    return landing ? reply.redirect(landing, 302) : { code: '0', data: result };
  });
}

const nameParam = {
  name: 'name',
  in: 'path',
  required: true,
  schema: { type: 'string' },
  description: 'The provider’s `name` in `oauth.providers`',
};
const location = { Location: { schema: { type: 'string', format: 'uri' } } };

/** The routes' entries in the OpenAPI document (plain Fastify routes are not generated from procedures). */
export const oauthRouteDocs = {
  '/auth/oauth/{name}/authorize': {
    get: {
      operationId: 'oauth-authorize',
      tags: ['Authentication'],
      summary:
        'Start an OAuth login: redirects the browser to the provider with a signed, single-use state (valid 10 minutes) and a PKCE S256 challenge',
      description:
        'For browsers (a link or button of the login page): sets a cookie binding the login to this browser for 10 minutes, then the provider sends the browser back to GET /auth/oauth/{name}/callback.',
      parameters: [nameParam],
      security: [],
      responses: {
        '302': { description: 'To the provider’s authorization page', headers: location },
        '404': errorResponse('E4041: OAuth is disabled, or no such provider'),
        '503': errorResponse(
          'E5031: the OpenID provider’s discovery document could not be loaded (tried again at the next login)',
        ),
      },
    },
  },
  '/auth/oauth/{name}/callback': {
    get: {
      operationId: 'oauth-browserCallback',
      tags: ['Authentication'],
      summary:
        'Where the provider sends the browser back (the redirect_url to register). With server.root_url set it redirects to `<root_url>/#token=<jwt>` (`#mfa_token=<token>` for an account with MFA); otherwise it answers as POST /auth/login',
      description:
        'Checks the state and that this browser started the login (the cookie authorize set), exchanges the code with the provider and logs the matching account in (README, OAuth login). An account with MFA gets the MFA challenge instead of a session, as from POST /auth/login: the code is mailed, and POST /auth/login with `mfa_token` and `mfa_code` completes the login.',
      parameters: [
        nameParam,
        { name: 'state', in: 'query', required: true, schema: { type: 'string' } },
        {
          name: 'code',
          in: 'query',
          required: false,
          schema: { type: 'string' },
          description: 'Present when the user allowed the login',
        },
        {
          name: 'error',
          in: 'query',
          required: false,
          schema: { type: 'string' },
          description: 'Present when the provider refused it (e.g. `access_denied`)',
        },
        {
          name: 'iss',
          in: 'query',
          required: false,
          schema: { type: 'string' },
          description: 'The issuer an OpenID provider names itself by (RFC 9207); checked against `issuer`',
        },
      ],
      security: [],
      responses: {
        '200': {
          description: 'Logged in, or (an account with MFA) its code mailed (no server.root_url)',
          content: {
            'application/json': {
              schema: envelopeOf({
                anyOf: [{ $ref: '#/components/schemas/LoginResult' }, { $ref: '#/components/schemas/MfaChallenge' }],
              }),
            },
          },
        },
        '302': {
          description:
            'Logged in: to `<server.root_url>/#token=<jwt>`; an account with MFA: to `<server.root_url>/#mfa_token=<token>`, its code mailed',
          headers: location,
        },
        '400': errorResponse(
          'E4001: state missing, invalid, expired or already used, or this browser did not start the login (the cookie authorize set is missing)',
        ),
        '401': errorResponse(
          'E4011: the provider refused the login or the code; its ID token failed a check; no account for it; an existing account it may not be linked to; account disabled or locked',
        ),
        '404': errorResponse('E4041: OAuth is disabled, or no such provider'),
        '503': errorResponse(
          'E5031: the provider (or its discovery document) could not be reached or answered with an error',
        ),
      },
    },
  },
};
