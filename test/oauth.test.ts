import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { decodeJwt, generateKeyPair, SignJWT } from 'jose';
import { ConfigError, loadConfig } from '../server/config/load.ts';
import type { ConsoleConfigInput } from '../server/config/schema.ts';
import { mapProfile, readPath } from '../routers/oauth/field-mapping.ts';
import { captureLogs, lanes, startConsole, type Reply, type TestConsole } from './support/harness.ts';
import { assertError, createRole, createUser, ok, unique } from './support/identity.ts';
import { startMailServer, type MailServer } from './support/mail-server.ts';
import {
  approve,
  browse,
  closedPort,
  devInteractionForm,
  freePort,
  startMockProvider,
  startOidcProvider,
  startSilentServer,
  type MockProvider,
  type OidcProvider,
  type ProviderUrls,
} from './support/oauth-providers.ts';

const JWT_SECRET = 'oauth-test-jwt-secret-0123456789';
const CLIENT = { id: 'console-client', secret: 'client-secret-never-shown' };
const POST_CLIENT = { id: 'console-post-client', secret: 'post-secret-never-shown' };
const ROOT_URL = 'https://console.example/app';
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const ENCRYPT_KEY = 'k'.repeat(32);

type Provider = NonNullable<NonNullable<ConsoleConfigInput['oauth']>['providers']>[number];

/** A provider key registered with the mock client; the callback address is never fetched (the tests call it). */
const provider = (name: string, urls: ProviderUrls, extra: Partial<Provider> = {}): Provider => ({
  name,
  client_id: CLIENT.id,
  client_secret: CLIENT.secret,
  ...urls,
  redirect_url: `http://console.test/api/auth/oauth/${name}/callback`,
  ...extra,
});

for (const lane of lanes()) {
  describe(`oauth [${lane.name}]`, () => {
    let mock: MockProvider;
    let oidc: OidcProvider;
    /** The OpenID provider's accounts by login name; tests add their own. */
    const accounts: Record<string, Record<string, unknown>> = {
      alice: { email: 'alice@example.test', email_verified: true, name: 'Alice Admin', preferred_username: 'alice' },
      bob: { email: 'bob@example.test', email_verified: true, preferred_username: 'bob' },
      carol: { email: 'carol@example.test', email_verified: true, preferred_username: 'carol' },
    };
    /** Where the MFA codes go. */
    let mail: MailServer;
    /** The OpenID provider `oidclate` is configured for, absent at startup. */
    let latePort: number;
    let silent: Awaited<ReturnType<typeof startSilentServer>>;
    let t: TestConsole;
    /** A second node on the same database, with server.root_url set. */
    let node2: TestConsole;
    let admin: string;
    let base: string;
    const logs = captureLogs('debug');

    before(async () => {
      mock = await startMockProvider([CLIENT, POST_CLIENT]);
      silent = await startSilentServer();
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      oidc = await startOidcProvider(
        {
          ...CLIENT,
          redirectUris: ['oidc', 'oidclate', 'oidcspec'].map((name) => `${base}/api/auth/oauth/${name}/callback`),
        },
        accounts,
      );
      latePort = await freePort();
      // Discovery only (no endpoint addresses), or the original keys only (no issuer). Roles and the avatar are
      // claims only an ID token may carry here.
      const openid = (name: string, endpoints: { issuer: string } | ProviderUrls): Provider => ({
        name,
        client_id: CLIENT.id,
        client_secret: CLIENT.secret,
        ...endpoints,
        redirect_url: `${base}/api/auth/oauth/${name}/callback`,
        username_field: 'preferred_username',
        full_name_field: 'name',
        avatar_field: 'picture',
        role_field: 'groups',
        auto_create_user: true,
      });
      const oauth = {
        enabled: true,
        timeout: '500ms',
        providers: [
          provider('mock', mock.urls, {
            display_name: 'Mock',
            icon_url: 'https://icons.example/mock.svg',
            auto_create_user: true,
            email_field: 'profile.email',
            username_field: 'login',
            full_name_field: 'profile.name',
            avatar_field: 'picture',
            role_field: 'groups',
          }),
          provider('strict', mock.urls),
          provider('post', mock.urls, {
            client_id: POST_CLIENT.id,
            client_secret: POST_CLIENT.secret,
            token_auth_method: 'client_secret_post',
            auto_create_user: true,
          }),
          provider('wrongsecret', mock.urls, { client_secret: 'not-the-secret', auto_create_user: true }),
          provider(
            'down',
            { ...mock.urls, token_url: `http://127.0.0.1:${await closedPort()}/token` },
            { auto_create_user: true },
          ),
          provider('slow', { ...mock.urls, token_url: `${silent.url}/token` }, { auto_create_user: true }),
          openid('oidc', { issuer: oidc.issuer }),
          openid('oidclate', { issuer: `http://127.0.0.1:${latePort}` }),
          openid('oidcslow', { issuer: silent.url }),
          openid('oidcspec', oidc.urls),
        ],
      };
      t = await startConsole(
        lane,
        {
          server: { port },
          jwt: { secret: JWT_SECRET },
          global: { encrypt_key: ENCRYPT_KEY },
          oauth,
          tracing: { file: { path: join(mkdtempSync(join(tmpdir(), 'oauth-spans-')), 'spans.jsonl') } },
        },
        { logger: logs.logger },
      );
      await t.c.listen();
      node2 = await startConsole(
        lane,
        {
          database: t.database,
          server: { root_url: ROOT_URL },
          jwt: { secret: JWT_SECRET },
          global: { encrypt_key: ENCRYPT_KEY },
          oauth,
        },
        {},
        { keepTables: true },
      );
      admin = await t.login();
      mail = await startMailServer('plain');
      const smtp = { host: '127.0.0.1', port: mail.port, username: '', password: 'unused', use_tls: false };
      ok(
        await t.request('PUT', '/api/system/settings/smtp', {
          token: admin,
          body: { ...smtp, from_email: 'c@x.test' },
        }),
      );
    });
    after(async () => {
      await node2?.close();
      await t?.close();
      await Promise.all([mock?.close(), oidc?.close(), silent?.close(), mail?.close()]);
    });

    /** Starts a login at `node` and lets the mock provider answer: what it sends the browser back with. */
    async function authorizeAt(node: TestConsole, name: string) {
      const res = await node.request('GET', `/api/auth/oauth/${name}/authorize`);
      assert.equal(res.status, 302, res.text);
      const location = new URL(String(res.headers.location));
      const back = await approve(location.href);
      // The browser's cookie from authorize, which the GET callback asks for. No Path: the browser's default (the
      // provider's folder) also holds when a proxy serves the API under a prefix.
      assert.doesNotMatch(String(res.headers['set-cookie']), /path=/i);
      const cookie = String(res.headers['set-cookie']).split(';', 1)[0]!;
      return {
        location,
        cookie,
        code: back.searchParams.get('code'),
        state: back.searchParams.get('state')!,
        error: back.searchParams.get('error'),
      };
    }
    const postCallback = (
      node: TestConsole,
      name: string,
      body: Record<string, unknown>,
      headers?: Record<string, string>,
    ) => node.request('POST', `/api/auth/oauth/${name}/callback`, { body, headers });
    /** A browser logging in as `login` at the OpenID provider through `name`: the callback's answer. */
    async function oidcLogin(login: string, name = 'oidc'): Promise<Reply> {
      const res = await browse(`${base}/api/auth/oauth/${name}/authorize`, devInteractionForm(login));
      return { status: res.status, text: res.text, body: JSON.parse(res.text), headers: {} };
    }
    async function loginAt(name: string, node = t): Promise<Reply> {
      const { code, state } = await authorizeAt(node, name);
      return postCallback(node, name, { code, state });
    }
    /** A browser's login through `name` at node2 (server.root_url set): where it lands, the fragment's `key`. */
    async function landingValue(name: string, key: 'token' | 'mfa_token'): Promise<string> {
      const browser = await authorizeAt(node2, name);
      const res = await node2.request(
        'GET',
        `/api/auth/oauth/${name}/callback?code=${browser.code}&state=${encodeURIComponent(browser.state)}`,
        { headers: { cookie: browser.cookie } },
      );
      assert.equal(res.status, 302, res.text);
      const location = String(res.headers.location);
      assert.ok(location.startsWith(`${ROOT_URL}/#${key}=`), location);
      return decodeURIComponent(location.slice(`${ROOT_URL}/#${key}=`.length));
    }
    const userCount = async () =>
      (await t.request('GET', '/api/users?page_size=1', { token: admin })).body.total as number;
    const links = (provider: string, subject: string) =>
      t.c.db.knex(t.c.db.t.oauthIdentities).where({ provider, subject }).select('user_id');
    const audit = async (action: string, query = '') =>
      ok<any[]>(await t.request('GET', `/api/audit-logs?action=${action}&page_size=100${query}`, { token: admin }));

    test('providers are listed without secrets; an unknown provider is 404 E4041', async () => {
      const list = ok<any[]>(await t.request('GET', '/api/auth/oauth/providers'));
      assert.deepEqual(
        list.find((p) => p.name === 'mock'),
        { name: 'mock', display_name: 'Mock', icon_url: 'https://icons.example/mock.svg' },
      );
      assert.deepEqual(
        list.find((p) => p.name === 'strict'),
        { name: 'strict', display_name: 'strict', icon_url: null },
      );
      for (const secret of [CLIENT.secret, POST_CLIENT.secret]) assert.ok(!JSON.stringify(list).includes(secret));
      assertError(await t.request('GET', '/api/auth/oauth/nope/authorize'), 404, 'E4041');
      assertError(await postCallback(t, 'nope', { code: 'c', state: 's' }), 404, 'E4041');
      assertError(await t.request('GET', '/api/auth/oauth/nope/callback?code=c&state=s'), 404, 'E4041');
    });

    test('authorize redirects to the provider with a signed, expiring state and a PKCE S256 challenge', async () => {
      const res = await t.request('GET', '/api/auth/oauth/mock/authorize');
      assert.equal(res.status, 302);
      const location = new URL(String(res.headers.location));
      assert.equal(`${location.origin}${location.pathname}`, mock.urls.auth_url);
      const q = location.searchParams;
      assert.equal(q.get('response_type'), 'code');
      assert.equal(q.get('client_id'), CLIENT.id);
      assert.equal(q.get('redirect_uri'), 'http://console.test/api/auth/oauth/mock/callback');
      assert.equal(q.get('scope'), 'openid profile email');
      assert.equal(q.get('code_challenge_method'), 'S256');
      assert.match(q.get('code_challenge')!, /^[A-Za-z0-9_-]{43}$/);
      const claims = decodeJwt(q.get('state')!);
      assert.ok(
        claims.exp! - claims.iat! > 0 && claims.exp! - claims.iat! <= 600,
        'the state expires within 10 minutes',
      );
      assert.ok(!location.href.includes(CLIENT.secret));
      const other = new URL(String((await t.request('GET', '/api/auth/oauth/mock/authorize')).headers.location))
        .searchParams;
      assert.notEqual(other.get('state'), q.get('state'));
      assert.notEqual(other.get('code_challenge'), q.get('code_challenge'));
    });

    test('first login with auto_create_user: custom and nested fields, mapped roles, a session, audit records', async () => {
      const name = unique('ann');
      mock.user = {
        sub: `sub-${name}`,
        login: name,
        profile: { email: `${name}@corp.test`, name: 'Ann Example' },
        picture: 'https://img.example/ann.png',
        groups: ['operator', 'no-such-role', 'Admin'],
        email: 'decoy@wrong.test',
        username: 'decoy',
      };
      const before = await userCount();
      const { location, code, state } = await authorizeAt(t, 'mock');
      const data = ok(await postCallback(t, 'mock', { code, state }));
      assert.match(data.token, /^ey/);
      assert.ok(!Number.isNaN(Date.parse(data.expires_at)));
      assert.equal(data.user.username, name);
      assert.equal(data.user.email, `${name}@corp.test`);
      assert.equal(data.user.full_name, 'Ann Example');
      assert.equal(data.user.avatar, 'https://img.example/ann.png');
      assert.deepEqual(
        data.user.roles.map((r: { name: string }) => r.name),
        ['operator'],
        'unknown role names are ignored, and a provider never grants admin',
      );
      assert.ok(data.user.last_login_at);
      assert.equal(await userCount(), before + 1);

      const exchange = mock.tokenRequests.at(-1)!;
      assert.equal(
        createHash('sha256').update(exchange.body.code_verifier!).digest('base64url'),
        location.searchParams.get('code_challenge'),
        'the PKCE verifier matches the challenge',
      );
      assert.equal(exchange.body.redirect_uri, location.searchParams.get('redirect_uri'));
      assert.match(String(exchange.headers.authorization), /^Basic /, 'client_secret_basic by default');
      assert.equal(exchange.body.client_secret, undefined);

      const me = ok(await t.request('GET', '/api/auth/me', { token: data.token }));
      assert.equal(me.id, data.user.id);
      assert.ok(me.permissions.includes('task:list'), 'the mapped role grants its permissions');
      const login = (await audit('login')).find((r) => r.user_id === data.user.id);
      assert.ok(login, 'the login is audited as a login');
      assert.equal(login.details.provider, 'mock');
      assert.equal(login.resource_type, 'session');
      assert.deepEqual(await audit('oauth_login'), [], 'no action of its own: one filter finds every login');
      // The same user's password login is found by the same filter, without a provider.
      ok(
        await t.request('PUT', `/api/users/${data.user.id}/password`, {
          token: admin,
          body: { password: 'password-9' },
        }),
      );
      await t.login(name, 'password-9');
      const logins = await audit('login', `&user_id=${data.user.id}`);
      assert.deepEqual(logins.map((r) => r.details.provider ?? 'password').sort(), ['mock', 'password']);
      const created = (await audit('create')).find((r) => r.resource_id === data.user.id);
      assert.equal(created?.details.provider, 'mock');

      // The account stays linked by its subject, whatever its email or login name become.
      mock.user = { ...mock.user, login: 'renamed', profile: { email: 'moved@corp.test' } };
      const again = ok(await loginAt('mock'));
      assert.equal(again.user.id, data.user.id);
      assert.equal(again.user.username, name);
      assert.equal(await userCount(), before + 1);
      assert.equal((await links('mock', `sub-${name}`)).length, 1);
    });

    test('without auto_create_user an unknown account gets 401 E4011; nothing is created; the failure is audited', async () => {
      const name = unique('bob');
      mock.user = { sub: `sub-${name}`, email: `${name}@corp.test`, email_verified: true, username: name };
      const before = await userCount();
      assertError(await loginAt('strict'), 401, 'E4011', /no account is linked/);
      assert.equal(await userCount(), before);
      assert.equal((await links('strict', `sub-${name}`)).length, 0);
      const failure = (await audit('login_failed')).find(
        (r) => r.details.provider === 'strict' && /no account/.test(String(r.details.reason)),
      );
      assert.ok(failure, 'the refusal is audited');
      assert.equal(failure.status, 'failure');
    });

    test('an existing user is matched by email only when the provider says the email is verified', async () => {
      const existing = await createUser(t, admin);
      const subject = `sub-${existing.username}`;
      const before = await userCount();
      mock.user = { sub: subject, email: existing.email.toUpperCase(), username: 'someone', email_verified: false };
      assertError(await loginAt('post'), 401, 'E4011', /verified/);
      // Only the boolean true vouches: a string is not what OpenID Connect sends.
      mock.user = { ...mock.user, email_verified: 'true' };
      assertError(await loginAt('post'), 401, 'E4011', /verified/);
      assert.equal(await userCount(), before, 'no second account with that email, although auto_create_user is on');
      assert.equal((await links('post', subject)).length, 0);

      mock.user = { ...mock.user, email_verified: true };
      assert.equal(ok(await loginAt('strict')).user.id, existing.id);
      assert.deepEqual(await links('strict', subject), [{ user_id: existing.id }]);
      // Linked now: the email no longer matters.
      mock.user = { sub: subject, email: 'elsewhere@corp.test', email_verified: false };
      assert.equal(ok(await loginAt('strict')).user.id, existing.id);
      assert.equal(await userCount(), before);
    });

    test('usernames: a taken one gets a number, invalid characters are replaced, the email serves when there is none', async () => {
      const tag = unique('');
      const loginAs = async (login: string | undefined, email: string) => {
        mock.user = { sub: `S${tag}${email.length}`, ...(login === undefined ? {} : { login }), profile: { email } };
        return ok(await loginAt('mock')).user.username as string;
      };
      assert.equal(await loginAs('admin', `a${tag}@corp.test`), 'admin-2');
      assert.equal(await loginAs('admin', `bb${tag}@corp.test`), 'admin-3');
      assert.equal(await loginAs(`José Müller ${tag}!`, `ccc${tag}@corp.test`), `Jose-Muller-${tag}`);
      assert.equal(await loginAs(undefined, `x.y+${tag}@corp.test`), `x.y-${tag}`);
      // Neither the login nor the email's "zz" make a valid name: the account id does.
      assert.equal(await loginAs('-', 'zz@corp.test'), `user-S${tag}12`);
    });

    test('a state works once: a replay is refused on the same node and on another one, also when racing', async () => {
      const name = unique('cy');
      mock.user = { sub: `sub-${name}`, login: name, profile: { email: `${name}@corp.test` } };
      const first = await authorizeAt(t, 'mock');
      ok(await postCallback(node2, 'mock', { code: first.code, state: first.state }));
      const exchanges = mock.tokenRequests.length;
      assertError(await postCallback(t, 'mock', { code: first.code, state: first.state }), 400, 'E4001', /^state: /);
      assertError(
        await postCallback(node2, 'mock', { code: first.code, state: first.state }),
        400,
        'E4001',
        /^state: /,
      );
      assert.equal(mock.tokenRequests.length, exchanges, 'a replay never reaches the provider');

      const second = await authorizeAt(node2, 'mock');
      const raced = await Promise.all(
        [t, node2, t, node2].map((node) => postCallback(node, 'mock', { code: second.code, state: second.state })),
      );
      assert.deepEqual(raced.map((r) => r.status).sort(), [200, 400, 400, 400]);
    });

    test('invalid, foreign, forged and expired states are refused with 400 E4001 before the provider is asked', async () => {
      const exchanges = mock.tokenRequests.length;
      const refused = async (state: string | undefined) =>
        assertError(await postCallback(t, 'mock', { code: 'a-code', state }), 400, 'E4001', /^state: /);
      await refused('not-a-jwt');
      await refused(undefined);
      await refused(await t.login());
      const foreign = await authorizeAt(t, 'strict');
      await refused(foreign.state);

      const key = new TextEncoder().encode(JWT_SECRET);
      const real = await authorizeAt(t, 'mock');
      const claims = decodeJwt(real.state);
      const resign = (exp: number, jti = claims.jti!) =>
        new SignJWT({ ...claims, jti }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime(exp).sign(key);
      await refused(await resign(Math.floor(Date.now() / 1000) - 5));
      await refused(await resign(claims.exp!, 'never-issued'));
      await refused(
        await new SignJWT(claims)
          .setProtectedHeader({ alg: 'HS256' })
          .sign(new TextEncoder().encode('another-secret-0123456789abcdef')),
      );
      // The pending login's own row expires too.
      await t.c.db
        .knex(t.c.db.t.oauthStates)
        .update({ expires_at: t.c.db.dialect.toDbTime(new Date(Date.now() - 1000)) });
      await refused(real.state);
      assert.equal(mock.tokenRequests.length, exchanges);
    });

    test('a provider error (access_denied) gets 401 E4011 naming it; nothing is created; the state is used up', async () => {
      const before = await userCount();
      mock.denyNext('access_denied');
      const { code, state, error, cookie } = await authorizeAt(t, 'mock');
      assert.equal(error, 'access_denied');
      assert.equal(code, null);
      const exchanges = mock.tokenRequests.length;
      assertError(
        await t.request('GET', `/api/auth/oauth/mock/callback?error=access_denied&state=${encodeURIComponent(state)}`, {
          headers: { cookie },
        }),
        401,
        'E4011',
        /access_denied/,
      );
      assertError(
        await t.request('GET', `/api/auth/oauth/mock/callback?state=${encodeURIComponent(state)}&code=late`, {
          headers: { cookie },
        }),
        400,
        'E4001',
        /^state: already used/,
      );
      assertError(await postCallback(t, 'mock', { state }), 400, 'E4001', /^code: /);
      assert.equal(mock.tokenRequests.length, exchanges);
      assert.equal(await userCount(), before);
    });

    test('a provider that is down, hangs or refuses the client gets 503 E5031, quickly, and nothing is created', async () => {
      mock.user = { sub: `sub-${unique()}`, email: `${unique()}@corp.test` };
      const before = await userCount();
      for (const [name, message] of [
        ['down', /could not be reached/],
        ['slow', /could not be reached/],
        ['wrongsecret', /HTTP 401/],
      ] as const) {
        const started = performance.now();
        const res = await loginAt(name);
        assertError(res, 503, 'E5031', message);
        assert.ok(performance.now() - started < 3000, `${name} answered within the timeout`);
        assert.doesNotMatch(res.text, /ECONN|fetch|stack|at \w+ \(/);
      }
      assert.equal(await userCount(), before);
    });

    test('a user info without the email field gets 401 E4011 naming the field', async () => {
      const before = await userCount();
      mock.user = { sub: `sub-${unique()}`, login: unique('noemail'), email: 'top-level@corp.test' };
      assertError(await loginAt('mock'), 401, 'E4011', /profile\.email/);
      mock.user = { sub: `sub-${unique()}`, login: unique('noemail'), profile: { email: 'not an email' } };
      assertError(await loginAt('mock'), 401, 'E4011', /profile\.email/);
      assert.equal(await userCount(), before);
    });

    test('a disabled or deleted linked user cannot log in through OAuth', async () => {
      const name = unique('dee');
      mock.user = { sub: `sub-${name}`, login: name, profile: { email: `${name}@corp.test` } };
      const { user, token } = ok(await loginAt('mock'));
      ok(await t.request('PUT', `/api/users/${user.id}`, { token: admin, body: { status: 'disabled' } }));
      assertError(await loginAt('mock'), 401, 'E4011', /disabled/);
      const refused = (await audit('login_failed')).find((r) => r.user_id === user.id);
      assert.match(String(refused?.details.reason), /disabled/);
      assertError(await t.request('GET', '/api/auth/me', { token }), 401, 'E4012');
      ok(await t.request('DELETE', `/api/users/${user.id}`, { token: admin }));
      const before = await userCount();
      assertError(await loginAt('mock'), 401, 'E4011', /deleted/);
      assert.equal(await userCount(), before, 'no new account replaces the deleted one');
    });

    test('client_secret_post sends the client credentials in the form', async () => {
      mock.user = { sub: `sub-${unique()}`, email: `${unique('p')}@corp.test`, username: unique('p') };
      ok(await loginAt('post'));
      const exchange = mock.tokenRequests.at(-1)!;
      assert.equal(exchange.body.client_id, POST_CLIENT.id);
      assert.equal(exchange.body.client_secret, POST_CLIENT.secret);
      assert.equal(exchange.headers.authorization, undefined);
    });

    test('GET callback: the JSON answer without server.root_url, a redirect to <root_url>/#token= with it', async () => {
      const name = unique('gus');
      mock.user = { sub: `sub-${name}`, login: name, profile: { email: `${name}@corp.test` } };
      const plain = await authorizeAt(t, 'mock');
      const plainUrl = `/api/auth/oauth/mock/callback?code=${plain.code}&state=${encodeURIComponent(plain.state)}&iss=ignored`;
      // Another browser (no cookie, or the cookie of another login) cannot finish it; the state stays usable.
      assertError(await t.request('GET', plainUrl), 400, 'E4001', /^state: this login was not started in this browser/);
      const other = await authorizeAt(t, 'mock');
      assertError(
        await t.request('GET', plainUrl, { headers: { cookie: other.cookie } }),
        400,
        'E4001',
        /^state: this login was not started in this browser/,
      );
      const json = ok(await t.request('GET', plainUrl, { headers: { cookie: plain.cookie } }));
      assert.equal(json.user.username, name);

      const token = await landingValue('mock', 'token');
      assert.equal(ok(await t.request('GET', '/api/auth/me', { token })).username, name);
    });

    test('the token exchange carries the traceparent of the request’s trace', async () => {
      mock.user = { sub: `sub-${unique()}`, login: unique('tr'), profile: { email: `${unique('tr')}@corp.test` } };
      const { code, state } = await authorizeAt(t, 'mock');
      ok(await postCallback(t, 'mock', { code, state }, { traceparent: `00-${TRACE}-00f067aa0ba902b7-01` }));
      assert.match(String(mock.tokenRequests.at(-1)!.headers.traceparent), new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`));
    });

    test('end to end through a real OpenID provider configured by its issuer only: discovery, login form, consent, callback', async () => {
      const start = await t.request('GET', '/api/auth/oauth/oidc/authorize');
      const sent = new URL(String(start.headers.location));
      assert.equal(`${sent.origin}${sent.pathname}`, oidc.urls.auth_url, 'the discovered authorization endpoint');
      assert.match(sent.searchParams.get('nonce')!, /^[A-Za-z0-9_-]{43}$/, 'a nonce is sent');
      const res = await browse(`${base}/api/auth/oauth/oidc/authorize`, devInteractionForm('alice'));
      assert.equal(res.status, 200, `${res.hops.join(' | ')}: ${res.text}`);
      assert.ok(
        res.hops.some((h) => h.startsWith('POST /interaction/')),
        `the login form was filled: ${res.hops.join(' | ')}`,
      );
      const { code, data } = JSON.parse(res.text);
      assert.equal(code, '0');
      assert.equal(data.user.username, 'alice');
      assert.equal(data.user.email, 'alice@example.test');
      assert.equal(data.user.full_name, 'Alice Admin');
      assert.equal(ok(await t.request('GET', '/api/auth/me', { token: data.token })).id, data.user.id);
    });

    test('claims of the verified ID token fill the mapped fields the user info lacks; a matching at_hash passes', async () => {
      oidc.changeNextTokenAnswer(async (answer) => {
        const claims = decodeJwt(answer.id_token!);
        const digest = createHash('sha256').update(answer.access_token!).digest();
        const at_hash = digest.subarray(0, 16).toString('base64url');
        return {
          ...answer,
          id_token: await oidc.sign({
            ...claims,
            at_hash,
            groups: ['operator'],
            picture: 'https://img.example/bob.png',
            email: 'decoy@example.test',
          }),
        };
      });
      const { user } = ok(await oidcLogin('bob'));
      assert.equal(user.username, 'bob');
      assert.equal(user.email, 'bob@example.test', 'the user info’s own email wins');
      assert.equal(user.avatar, 'https://img.example/bob.png');
      assert.deepEqual(
        user.roles.map((r: { name: string }) => r.name),
        ['operator'],
      );
    });

    test('a bad ID token gets 401 E4011 naming the failed check and an audit record; nobody is created', async () => {
      const before = await userCount();
      const { privateKey: foreignKey } = await generateKeyPair('RS256');
      const now = Math.floor(Date.now() / 1000);
      const cases: [string, (claims: Record<string, unknown>) => Promise<string>][] = [
        ['signature', (claims) => oidc.sign(claims, foreignKey)],
        ['aud', (claims) => oidc.sign({ ...claims, aud: 'another-client' })],
        ['iss', (claims) => oidc.sign({ ...claims, iss: 'https://elsewhere.example' })],
        ['exp', (claims) => oidc.sign({ ...claims, iat: now - 3600, exp: now - 600 })],
        ['at_hash', (claims) => oidc.sign({ ...claims, at_hash: 'AAAAAAAAAAAAAAAAAAAAAA' })],
        ['iat', (claims) => oidc.sign({ ...claims, iat: now + 120, exp: now + 3600 })],
      ];
      for (const [check, forge] of cases) {
        oidc.changeNextTokenAnswer(async (answer) => ({
          ...answer,
          id_token: await forge(decodeJwt(answer.id_token!)),
        }));
        assertError(await oidcLogin('carol'), 401, 'E4011', new RegExp(`ID token failed the ${check} check`));
        const refused = (await audit('login_failed')).find((r) => r.details.provider === 'oidc');
        assert.match(String(refused?.details.reason), new RegExp(`${check} check`), `${check}: audited`);
      }
      assert.equal(await userCount(), before);
    });

    test('a replayed token answer (an earlier login’s valid ID token) fails the nonce check', async () => {
      let earlier: Record<string, unknown> | undefined;
      oidc.changeNextTokenAnswer((answer) => (earlier = answer));
      ok(await oidcLogin('alice'));
      oidc.changeNextTokenAnswer(() => earlier!);
      assertError(await oidcLogin('alice'), 401, 'E4011', /ID token failed the nonce check/);
      assert.ok(logs.lines.some((l) => l.provider === 'oidc' && l.check === 'nonce'));
    });

    test('a provider whose discovery fails or hangs answers 503 E5031 within oauth.timeout and is discovered again later', async () => {
      const started = performance.now();
      assertError(
        await t.request('GET', '/api/auth/oauth/oidcslow/authorize'),
        503,
        'E5031',
        /oidcslow.*OpenID configuration/,
      );
      assert.ok(performance.now() - started < 3000, 'a hung discovery answered within the timeout');
      assertError(
        await t.request('GET', '/api/auth/oauth/oidclate/authorize'),
        503,
        'E5031',
        /oidclate.*OpenID configuration/,
      );
      assert.ok(logs.lines.some((l) => l.provider === 'oidclate' && /discovery failed/.test(String(l.msg))));
      const late = await startOidcProvider(
        { ...CLIENT, redirectUris: [`${base}/api/auth/oauth/oidclate/callback`] },
        { dave: { email: 'dave@example.test', preferred_username: 'dave' } },
        latePort,
      );
      try {
        const { user } = ok(await oidcLogin('dave', 'oidclate'));
        assert.equal(user.username, 'dave');
      } finally {
        await late.close();
      }
    });

    test('the original keys only (no issuer): the user comes from the user info, an ID token is not read, and the start says so once', async () => {
      const login = unique('dora');
      accounts[login] = {
        email: `${login}@example.test`,
        email_verified: true,
        name: 'Dora Spec',
        preferred_username: login,
      };
      const { user } = ok(await oidcLogin(login, 'oidcspec'));
      assert.equal(user.username, login);
      assert.equal(user.email, `${login}@example.test`);
      assert.equal(user.full_name, 'Dora Spec');
      // Whatever its ID token says, it is not what signs the person in.
      const { privateKey: foreignKey } = await generateKeyPair('RS256');
      oidc.changeNextTokenAnswer(async (answer) => ({
        ...answer,
        id_token: await oidc.sign({ sub: 'someone-else', aud: 'another-client', iss: 'https://x.example' }, foreignKey),
      }));
      assert.equal(ok(await oidcLogin(login, 'oidcspec')).user.id, user.id);
      // A plain OAuth 2 provider that sends one anyway (the mock signs johndoe's, whoever logs in).
      mock.user = { sub: `sub-${unique()}`, email: `${unique('it')}@corp.test` };
      mock.sendIdToken = true;
      try {
        assert.equal(ok(await loginAt('post')).user.email, mock.user.email);
      } finally {
        mock.sendIdToken = false;
      }
      const unverified = (name: string) =>
        logs.lines.filter((l) => l.provider === name && /ID tokens are not verified/.test(String(l.msg)));
      assert.equal(unverified('oidcspec').length, 1, 'logged once, at start');
      assert.equal(unverified('oidc').length, 0, 'a provider with issuer verifies them');
    });

    test('an account with MFA answers the MFA challenge after an OAuth login; the mailed code opens the session', async () => {
      const user = await createUser(t, admin, { mfa_enabled: true });
      const codeAfter = async (before: number) => /\b(\d{6})\b/.exec((await mail.next(before)).text)![1]!;
      const finish = async (challenge: Record<string, unknown>, before: number) => {
        assert.deepEqual(Object.keys(challenge).sort(), ['mfa_required', 'mfa_token'], 'no token before the code');
        const code = await codeAfter(before);
        const body = { mfa_token: challenge.mfa_token, mfa_code: code };
        const { token } = ok(await t.request('POST', '/api/auth/login', { body }));
        assert.equal(ok(await t.request('GET', '/api/auth/me', { token })).id, user.id);
      };
      for (const name of ['oidc', 'oidcspec']) {
        const login = unique('mfa');
        accounts[login] = { email: user.email, email_verified: true };
        const before = mail.received.length;
        await finish(ok(await oidcLogin(login, name)), before);
      }
      // The single-page app's POST callback, and a browser's GET callback landing at server.root_url.
      mock.user = { sub: `sub-${user.username}`, email: user.email, email_verified: true };
      let before = mail.received.length;
      await finish(ok(await loginAt('strict')), before);
      before = mail.received.length;
      const mfa_token = await landingValue('strict', 'mfa_token');
      await finish({ mfa_required: true, mfa_token }, before);
      const logins = await audit('login', `&user_id=${user.id}`);
      assert.equal(logins.length, 4, 'a session only after each code');

      const doc = (await t.request('GET', '/api/openapi.json')).body;
      const callback = doc.paths['/auth/oauth/{name}/callback'];
      for (const op of [callback.get, callback.post])
        assert.match(JSON.stringify(op.responses['200']), /MfaChallenge/, 'the challenge is a documented answer');
    });

    test('linking by verified email never reaches an account that may change anything: refused, told and audited', async () => {
      const roles = ok<any[]>(await t.request('GET', '/api/roles?page_size=100', { token: admin }));
      const roleId = (name: string) => roles.find((r) => r.name === name).id;
      const administrator = ok(await t.request('GET', '/api/auth/me', { token: admin }));
      const operator = await createUser(t, admin, { role_ids: [roleId('operator')] });
      const viewer = await createUser(t, admin, { role_ids: [roleId('viewer')] });
      // One permission that changes something is enough.
      const canceller = await createUser(t, admin, {
        role_ids: [(await createRole(t, admin, ['task:list', 'task:view', 'task:cancel'])).id],
      });
      for (const name of ['oidc', 'oidcspec']) {
        for (const target of [administrator, operator, canceller]) {
          const login = unique('priv');
          accounts[login] = { email: target.email, email_verified: true, preferred_username: login };
          assertError(
            await oidcLogin(login, name),
            401,
            'E4011',
            /permissions beyond viewing.*log in with your password/,
          );
          assert.equal((await links(name, login)).length, 0, `${name}: ${target.username} not linked`);
          const refused = (await audit('login_failed', `&user_id=${target.id}`)).find(
            (r) => r.details.provider === name,
          );
          assert.match(
            String(refused?.details.reason),
            /permissions beyond viewing/,
            `${name}: audited for ${target.username}`,
          );
        }
        // Only the boolean true vouches for the email, here from a real OpenID provider's user info.
        const stringly = unique('str');
        accounts[stringly] = { email: viewer.email, email_verified: 'true' };
        assertError(await oidcLogin(stringly, name), 401, 'E4011', /does not say the email is verified/);
        const login = unique('view');
        accounts[login] = { email: viewer.email, email_verified: true };
        assert.equal(ok(await oidcLogin(login, name)).user.id, viewer.id, `${name}: a viewer is linked`);
        assert.deepEqual(await links(name, login), [{ user_id: viewer.id }]);
      }
    });

    test('client secrets appear in no answer, audit record or log line', async () => {
      const records = JSON.stringify([
        ...(await audit('login')),
        ...(await audit('login_failed')),
        ...(await audit('create')),
      ]);
      const logged = JSON.stringify(logs.lines);
      assert.ok(
        logs.lines.some((l) => l.provider === 'wrongsecret'),
        'provider failures are logged',
      );
      for (const secret of [CLIENT.secret, POST_CLIENT.secret, 'not-the-secret']) {
        assert.ok(!records.includes(secret), 'audit records');
        assert.ok(!logged.includes(secret), 'logs');
      }
    });
  });
}

describe('oauth with oauth.enabled false', () => {
  test('no providers are listed; authorize and callbacks answer 404 E4041', async () => {
    const t = await startConsole(lanes()[0]!, {
      oauth: {
        providers: [
          {
            name: 'gh',
            client_id: 'i',
            client_secret: 's',
            auth_url: 'https://gh.example/a',
            token_url: 'https://gh.example/t',
            user_info_url: 'https://gh.example/u',
            redirect_url: 'https://c.example/cb',
          },
        ],
      },
    });
    try {
      assert.deepEqual(ok(await t.request('GET', '/api/auth/oauth/providers')), []);
      assertError(await t.request('GET', '/api/auth/oauth/gh/authorize'), 404, 'E4041', /not enabled/);
      assertError(await t.request('GET', '/api/auth/oauth/gh/callback?code=c&state=s'), 404, 'E4041', /not enabled/);
      assertError(
        await t.request('POST', '/api/auth/oauth/gh/callback', { body: { code: 'c', state: 's' } }),
        404,
        'E4041',
        /not enabled/,
      );
    } finally {
      await t.close();
    }
  });
});

describe('oauth configuration', () => {
  const gh = {
    name: 'gh',
    client_id: 'i',
    client_secret: 's',
    auth_url: 'https://gh.example/a',
    token_url: 'https://gh.example/t',
    user_info_url: 'https://gh.example/u',
  };
  const load = (oauth: Record<string, unknown>, server: Record<string, unknown> = {}) =>
    loadConfig({ config: { oauth, server } as ConsoleConfigInput, env: {} });

  test('provider keys get their defaults', () => {
    const p = load({ enabled: true, providers: [gh] }, { root_url: 'https://c.example' }).oauth.providers[0]!;
    assert.equal(p.scopes, 'openid profile email');
    assert.equal(p.token_auth_method, 'client_secret_basic');
    assert.deepEqual(
      [p.email_field, p.username_field, p.full_name_field, p.avatar_field, p.auto_create_user],
      ['email', 'username', 'fullName', 'avatar', false],
    );
    assert.equal(load({}).oauth.timeout, 10_000);
  });

  test('the endpoint addresses are required without issuer, optional with it', () => {
    const { auth_url: _a, token_url: _t, user_info_url: _u, ...bare } = gh;
    for (const key of ['auth_url', 'token_url', 'user_info_url'] as const) {
      assert.throws(
        () => load({ providers: [{ ...gh, [key]: undefined }] }),
        (e: Error) => e.message.includes(`oauth.providers.0.${key}: is required when issuer is not set`),
      );
    }
    const p = load({ providers: [{ ...bare, issuer: 'https://sso.example/realms/main' }] }).oauth.providers[0]!;
    assert.equal(p.issuer, 'https://sso.example/realms/main');
    assert.equal(p.auth_url, undefined);
    assert.throws(() => load({ providers: [{ ...bare, issuer: 'not a url' }] }), /oauth\.providers\.0\.issuer/);
  });

  test('redirect_url is required without server.root_url; names are unique; the secret is never repeated', () => {
    assert.throws(
      () => load({ enabled: true, providers: [gh] }),
      (e: Error) =>
        e instanceof ConfigError &&
        /oauth\.providers\.0\.redirect_url: is required when server\.root_url is empty/.test(e.message),
    );
    assert.doesNotThrow(() => load({ enabled: true, providers: [{ ...gh, redirect_url: 'https://c.example/cb' }] }));
    assert.throws(
      () => load({ enabled: true, providers: [gh, gh] }, { root_url: 'https://c.example' }),
      /names must be unique/,
    );
    assert.throws(
      () => load({ providers: [{ ...gh, client_secret: 7 }] }),
      (e: Error) => /client_secret/.test(e.message) && !e.message.includes('7'),
    );
  });
});

describe('oauth field paths', () => {
  test('nested paths, and keys that contain dots', () => {
    const info = { profile: { email: 'a@b.c', 'x.y': 1 }, 'https://ns.example/roles': ['r'], 'a.b': { c: 2 } };
    assert.equal(readPath(info, 'profile.email'), 'a@b.c');
    assert.equal(readPath(info, 'profile.x.y'), 1);
    assert.deepEqual(readPath(info, 'https://ns.example/roles'), ['r']);
    assert.equal(readPath(info, 'a.b.c'), 2);
    assert.equal(readPath(info, 'profile.missing'), undefined);
    assert.equal(readPath(info, 'profile.email.more'), undefined);
  });
});

describe('oauth email verification', () => {
  const names = {
    email_field: 'profile.email',
    username_field: 'login',
    full_name_field: 'name',
    avatar_field: 'picture',
  };
  test('the top-level email_verified vouches for the top-level email only, never for an address read elsewhere', () => {
    const info = {
      sub: 'attacker',
      email: 'attacker@evil.test',
      email_verified: true,
      profile: { email: 'victim@corp.test' },
    };
    assert.equal(mapProfile(info, names).email, 'victim@corp.test');
    assert.equal(mapProfile(info, names).emailVerified, false);
    assert.equal(
      mapProfile({ ...info, profile: { email: 'victim@corp.test', email_verified: true } }, names).emailVerified,
      true,
    );
    assert.equal(mapProfile(info, { ...names, email_field: 'email' }).emailVerified, true);
    for (const flag of ['true', 1, 'yes'])
      assert.equal(
        mapProfile({ ...info, email_verified: flag }, { ...names, email_field: 'email' }).emailVerified,
        false,
        `${JSON.stringify(flag)} is not the boolean true`,
      );
    assert.equal(
      mapProfile({ ...info, profile: { email: 'victim@corp.test', email_verified: 'true' } }, names).emailVerified,
      false,
    );
  });
});
