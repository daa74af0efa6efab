// OAuth providers for the tests, on loopback: oauth2-mock-server (auto-approving, hooks for every answer) and
// oidc-provider (a real OpenID provider with login and consent forms), plus the headless browser that walks
// through them (the README's "OAuth login" section says how a provider is configured) and addresses where
// nothing answers.
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { OAuth2Server } from 'oauth2-mock-server';
import Provider from 'oidc-provider';

export interface ProviderUrls {
  auth_url: string;
  token_url: string;
  user_info_url: string;
}

export interface ClientCredentials {
  id: string;
  secret: string;
}

export interface TokenRequest {
  headers: IncomingHttpHeaders;
  body: Record<string, string>;
}

export interface MockProvider {
  urls: ProviderUrls;
  /** The user info the following logins get. */
  user: Record<string, unknown>;
  /** Every token request (headers and form), in order. */
  tokenRequests: TokenRequest[];
  /** The query of every authorization request. */
  authorizeRequests: Record<string, string>[];
  /** The next authorization answers `?error=<error>` instead of a code. */
  denyNext(error: string): void;
  /**
   * Whether token answers keep the ID token the mock signs (always for `johndoe`, whoever logs in). Off by
   * default: the mock stands for a plain OAuth 2 provider such as GitHub, which sends none.
   */
  sendIdToken: boolean;
  close(): Promise<void>;
}

const listening = async <T extends Server | TcpServer>(server: T): Promise<T> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
};
const portOf = (server: Server | TcpServer) => (server.address() as AddressInfo).port;

/** The client credentials a token request carried: HTTP Basic (form-encoded parts) or the form's fields. */
function clientOf(req: TokenRequest): { id?: string; secret?: string } {
  const basic = /^Basic (.+)$/i.exec(String(req.headers.authorization ?? ''))?.[1];
  if (!basic) return { id: req.body.client_id, secret: req.body.client_secret };
  const [id, secret] = Buffer.from(basic, 'base64')
    .toString()
    .split(':')
    .map((p) => decodeURIComponent(p.replace(/\+/g, ' ')));
  return { id, secret };
}

/**
 * oauth2-mock-server checks PKCE but not the client: this one also refuses wrong client credentials (401
 * invalid_client), a redirect_uri other than the authorization's, and user info asked without the access token
 * it issued. Every client listed may use it.
 */
export async function startMockProvider(clients: ClientCredentials[]): Promise<MockProvider> {
  const server = new OAuth2Server();
  await server.issuer.keys.generate('RS256');
  await server.start(0, '127.0.0.1');
  const base = `http://127.0.0.1:${server.address().port}`;
  server.issuer.url = base;
  const issued = new Set<string>();
  const redirectUris = new Set<string>();
  let deny: string | undefined;
  const mock: MockProvider = {
    urls: { auth_url: `${base}/authorize`, token_url: `${base}/token`, user_info_url: `${base}/userinfo` },
    user: { sub: 'johndoe' },
    tokenRequests: [],
    authorizeRequests: [],
    denyNext: (error) => void (deny = error),
    sendIdToken: false,
    close: () => server.stop(),
  };
  server.service.on('beforeAuthorizeRedirect', (redirect: { url: URL }, req: { query: Record<string, string> }) => {
    mock.authorizeRequests.push({ ...req.query });
    redirectUris.add(req.query.redirect_uri!);
    if (deny) {
      redirect.url.searchParams.delete('code');
      redirect.url.searchParams.set('error', deny);
      deny = undefined;
    }
  });
  server.service.on(
    'beforeResponse',
    (
      response: { body: Record<string, unknown>; statusCode: number },
      req: { headers: IncomingHttpHeaders; body: Record<string, string> },
    ) => {
      const request = { headers: req.headers, body: { ...req.body } };
      mock.tokenRequests.push(request);
      const client = clientOf(request);
      if (!clients.some((c) => c.id === client.id && c.secret === client.secret)) {
        response.statusCode = 401;
        response.body = { error: 'invalid_client' };
      } else if (!redirectUris.has(request.body.redirect_uri ?? '')) {
        response.statusCode = 400;
        response.body = { error: 'invalid_grant' };
      } else {
        issued.add(String(response.body.access_token));
        if (!mock.sendIdToken) delete response.body.id_token;
      }
    },
  );
  server.service.on(
    'beforeUserinfo',
    (response: { body: unknown; statusCode: number }, req: { headers: IncomingHttpHeaders }) => {
      const token = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
      if (!token || !issued.has(token)) {
        response.statusCode = 401;
        response.body = { error: 'invalid_token' };
      } else {
        response.body = structuredClone(mock.user);
      }
    },
  );
  return mock;
}

/** Follows the provider's authorization redirect (it approves at once) to the callback address it sends the browser to. */
export async function approve(authorizeUrl: string): Promise<URL> {
  const res = await fetch(authorizeUrl, { redirect: 'manual' });
  const location = res.headers.get('location');
  if (res.status !== 302 || !location) throw new Error(`authorization answered ${res.status}: ${await res.text()}`);
  return new URL(location);
}

/** A loopback port where nothing listens (a provider that is down). */
export async function closedPort(): Promise<number> {
  const server = await listening(createHttpServer());
  const port = portOf(server);
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A port that is free now, for a server whose address must be configured before it starts. */
export const freePort = closedPort;

/** A provider that accepts connections and never answers (a hung provider). */
export async function startSilentServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = await listening(createTcpServer((socket) => sockets.add(socket)));
  return {
    url: `http://127.0.0.1:${portOf(server)}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export type TokenAnswer = Record<string, unknown> & { id_token?: string; access_token?: string };

export interface OidcProvider {
  issuer: string;
  urls: ProviderUrls;
  /** The next token answer goes through `change` before it is sent (a test's forged or replayed ID token). */
  changeNextTokenAnswer(change: (answer: TokenAnswer) => TokenAnswer | Promise<TokenAnswer>): void;
  /** An ID token with these claims, signed with the provider's own key (`key` instead: a forgery under its key id). */
  sign(claims: JWTPayload, key?: CryptoKey): Promise<string>;
  close(): Promise<void>;
}

const KID = 'oidc-test-key';

/**
 * An OpenID provider (oidc-provider) with its development login and consent pages; any password logs in and
 * the login name is the account id. `accounts` gives each account's claims (`email`, `name`, ...). Its signing
 * key is known here, so tests can make ID tokens it would have signed; `port` starts it where a provider was
 * configured but absent until now.
 */
export async function startOidcProvider(
  client: ClientCredentials & { redirectUris: string[] },
  accounts: Record<string, Record<string, unknown>>,
  port = 0,
): Promise<OidcProvider> {
  const server = createHttpServer();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${portOf(server)}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: client.id,
        client_secret: client.secret,
        redirect_uris: client.redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'preferred_username'] },
    cookies: { keys: ['oauth-test-cookie-key'] },
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: KID, alg: 'RS256', use: 'sig' }] },
    findAccount: (_ctx: unknown, id: string) => ({ accountId: id, claims: async () => ({ sub: id, ...accounts[id] }) }),
  });
  let change: ((answer: TokenAnswer) => TokenAnswer | Promise<TokenAnswer>) | undefined;
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.path !== '/token' || !change || ctx.status !== 200) return;
    const pending = change;
    change = undefined;
    ctx.body = await pending(ctx.body as TokenAnswer);
  });
  server.on('request', provider.callback());
  return {
    issuer,
    urls: { auth_url: `${issuer}/auth`, token_url: `${issuer}/token`, user_info_url: `${issuer}/me` },
    changeNextTokenAnswer: (next) => void (change = next),
    sign: (claims, key = privateKey) => new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: KID }).sign(key),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export interface Form {
  action: string;
  fields: Record<string, string>;
}

/**
 * Fills oidc-provider's development forms: every input is posted back (the hidden `prompt` too, or it answers
 * 500), the login form with `login` as the account name.
 */
export const devInteractionForm =
  (login: string) =>
  (html: string, url: string): Form | undefined => {
    const m = /<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/i.exec(html);
    if (!m) return undefined;
    const fields: Record<string, string> = {};
    for (const [tag] of m[2]!.matchAll(/<input[^>]*>/gi)) {
      const name = /name="([^"]+)"/.exec(tag)?.[1];
      if (name) fields[name] = /value="([^"]*)"/.exec(tag)?.[1] ?? '';
    }
    if ('login' in fields) Object.assign(fields, { login, password: 'any-password' });
    return { action: new URL(m[1]!, url).href, fields };
  };

/**
 * A headless browser: follows redirects with a cookie jar per origin and submits the forms `form` fills in,
 * until an answer that is neither; answers it with the path taken.
 */
export async function browse(
  startUrl: string,
  form: (html: string, url: string) => Form | undefined,
): Promise<{ status: number; text: string; hops: string[] }> {
  const jar = new Map<string, Map<string, string>>();
  const cookies = (url: string) => [...(jar.get(new URL(url).origin) ?? [])].map(([k, v]) => `${k}=${v}`).join('; ');
  let url = startUrl;
  let method = 'GET';
  let body: string | undefined;
  const hops: string[] = [];
  for (let i = 0; i < 20; i++) {
    const res = await fetch(url, {
      method,
      body,
      redirect: 'manual',
      headers: { cookie: cookies(url), ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    });
    const own = jar.get(new URL(url).origin) ?? new Map<string, string>();
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      own.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1));
    }
    jar.set(new URL(url).origin, own);
    hops.push(`${method} ${new URL(url).pathname} -> ${res.status}`);
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location')!, url).href;
      method = 'GET';
      body = undefined;
      continue;
    }
    const text = await res.text();
    const filled = res.headers.get('content-type')?.includes('text/html') ? form(text, url) : undefined;
    if (!filled) return { status: res.status, text, hops };
    url = filled.action;
    method = 'POST';
    body = new URLSearchParams(filled.fields).toString();
  }
  throw new Error(`too many hops: ${hops.join(' | ')}`);
}
