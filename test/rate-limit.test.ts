import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { clientNetwork } from '../lib/client-network.ts';
import { RateLimiter } from '../lib/rate-windows.ts';
import type { ConsoleConfigInput } from '../server/config/schema.ts';
import { ADMIN_PASSWORD, lanes, startConsole, type Lane, type TestConsole } from './support/harness.ts';
import { assertError, createUser, ok, PASSWORD, unique } from './support/identity.ts';

describe('rate limiter windows', () => {
  test('counts within a minute, answers the reset as Unix seconds, and starts over after it', () => {
    const limiter = new RateLimiter();
    const start = Date.UTC(2026, 0, 1, 12, 0, 0, 500);
    const first = limiter.hit('k', 2, start);
    assert.deepEqual(first, { limit: 2, remaining: 1, reset: Math.ceil((start + 60_000) / 1000), allowed: true });
    assert.equal(limiter.hit('k', 2, start + 1).allowed, true);
    const third = limiter.hit('k', 2, start + 2);
    assert.equal(third.allowed, false);
    assert.equal(third.remaining, 0);
    assert.equal(limiter.hit('other', 2, start + 3).allowed, true, 'keys are counted apart');
    assert.equal(limiter.hit('k', 2, start + 60_000).allowed, true, 'a new window after the reset');
  });
});

describe('the network a client address is counted as', () => {
  test('IPv4 as itself, IPv6 as its /64 however written, an IPv4-mapped address as its IPv4', () => {
    assert.equal(clientNetwork('203.0.113.9'), '203.0.113.9');
    for (const ip of ['2001:db8:1:2:3:4:5:6', '2001:DB8:1:2::9', '2001:0db8:0001:0002:ffff::1', '2001:db8:1:2::1%eth0'])
      assert.equal(clientNetwork(ip), '2001:db8:1:2::/64', ip);
    assert.equal(clientNetwork('2001:db8:1:3::1'), '2001:db8:1:3::/64', 'the next /64 is another network');
    assert.equal(clientNetwork('2001:db8::'), '2001:db8:0:0::/64');
    assert.equal(clientNetwork('::1'), '0:0:0:0::/64');
    assert.equal(clientNetwork('::ffff:192.0.2.1'), '192.0.2.1');
    assert.equal(clientNetwork('::ffff:c000:201'), '192.0.2.1');
  });
});

/** A console allowing `[login, global]` requests per minute (plus `more` settings), for the length of `body`. */
async function withLimits(
  lane: Lane,
  [login, global]: [number, number],
  body: (t: TestConsole) => Promise<void>,
  more: ConsoleConfigInput = {},
): Promise<void> {
  const t = await startConsole(lane, {
    ...more,
    rate_limit: { enabled: true, login_per_minute: login, global_per_minute: global },
  });
  try {
    await body(t);
  } finally {
    await t.close();
  }
}

const proxied: ConsoleConfigInput = { server: { trust_proxy: true } };
const wrong = { password: 'wrong-password' };

for (const lane of lanes()) {
  describe(`rate limits [${lane.name}]`, () => {
    test('login per client network + account: headers, 429 E4291, other usernames unaffected', () =>
      withLimits(lane, [3, 1000], async (t) => {
        const login = (username: string) => t.request('POST', '/api/auth/login', { body: { username, ...wrong } });
        const now = Math.floor(Date.now() / 1000);
        const first = await login('someone');
        assert.equal(first.status, 401);
        assert.equal(first.headers['x-ratelimit-limit'], '3');
        assert.equal(first.headers['x-ratelimit-remaining'], '2');
        const reset = Number(first.headers['x-ratelimit-reset']);
        assert.ok(
          reset >= now + 59 && reset <= now + 65,
          `reset ${reset} is a Unix time about a minute ahead of ${now}`,
        );
        await login('someone');
        await login('someone');
        const limited = await login('Someone');
        assert.equal(limited.status, 429);
        assert.equal(limited.body.code, 'E4291');
        assert.equal(limited.headers['x-ratelimit-remaining'], '0');
        assert.equal((await login('another')).status, 401, 'another username has its own window');
        // The right password does not get past the limit either.
        assert.equal(
          (await t.request('POST', '/api/auth/login', { body: { username: 'admin', password: 'x' } })).status,
          401,
        );
      }));

    test('global limit per client IP, and per user when authenticated', () =>
      withLimits(lane, [100, 5], async (t) => {
        const admin = await t.login();
        for (let i = 0; i < 5; i++)
          assert.equal((await t.request('GET', '/api/auth/me', { token: admin })).status, 200);
        const limited = await t.request('GET', '/api/auth/me', { token: admin });
        assert.equal(limited.status, 429);
        assert.equal(limited.body.code, 'E4291');
        assert.equal(limited.headers['x-ratelimit-limit'], '5');
        // The address has its own window: the login above used one of its five requests.
        const anonymous = await t.request('GET', '/api/users');
        assert.equal(anonymous.status, 401);
        assert.equal(anonymous.headers['x-ratelimit-remaining'], '3');
        assert.equal(
          (await t.request('GET', '/healthz')).headers['x-ratelimit-limit'],
          undefined,
          'health checks are not limited',
        );
      }));

    test('a percent-encoded path is limited as the route it reaches', () =>
      withLimits(
        lane,
        [100, 3],
        async (t) => {
          for (const [i, url] of ['/%61pi/users', '/%74rpc/users.list', '/api/%75sers'].entries()) {
            const headers = { 'x-forwarded-for': `198.51.100.${i + 1}` };
            for (let n = 0; n < 3; n++) {
              const res = await t.request('GET', url, { headers });
              assert.equal(res.status, 401, `${url} reaches its handler`);
              assert.equal(res.headers['x-ratelimit-limit'], '3', url);
            }
            assertError(await t.request('GET', url, { headers }), 429, 'E4291');
          }
        },
        proxied,
      ));

    test('a login counts against its account however it names it, on every path, tRPC batches call by call', () =>
      withLimits(lane, [4, 1000], async (t) => {
        const user = await createUser(t, await t.login());
        const post = (url: string, body: unknown) => t.request('POST', url, { body });
        assertError(await post('/api/auth/login', { username: user.username, ...wrong }), 401, 'E4011');
        assertError(await post('/api/auth/login', { username: user.email.toUpperCase(), ...wrong }), 401, 'E4011');
        const encoded = await post('/api/auth/%6cogin', { username: user.username, ...wrong });
        assertError(encoded, 401, 'E4011');
        assert.equal(encoded.headers['x-ratelimit-remaining'], '1', 'username, email and encoded path: one window');
        const single = await post('/trpc/auth.login', { username: user.username, ...wrong });
        assert.equal(single.status, 401);
        assert.equal(single.headers['x-ratelimit-remaining'], '0');
        const batch = await post('/trpc/auth.login,auth.login?batch=1', {
          0: { username: user.username, password: PASSWORD },
          1: { username: user.email, ...wrong },
        });
        assert.deepEqual(
          (batch.body as { error: { appCode: string } }[]).map((r) => r.error.appCode),
          ['E4291', 'E4291'],
          'each call of a batch counts',
        );
        assertError(await post('/api/auth/login', { username: user.username, password: PASSWORD }), 429, 'E4291');

        // Junk tRPC logins under other names do not shut the administrator out of the typed client.
        for (let i = 0; i < 6; i++)
          assert.equal((await post('/trpc/auth.login', { username: unique('junk'), ...wrong })).status, 401);
        const typed = await post('/trpc/auth.login', { username: 'admin', password: ADMIN_PASSWORD });
        assert.equal(typed.status, 200, typed.text);
      }));

    test('password hashing in flight is capped per client network; another network still logs in', () =>
      withLimits(
        lane,
        [100, 1000],
        async (t) => {
          const login = (username: string, password: string, ip: string) =>
            t.request('POST', '/api/auth/login', { body: { username, password }, headers: { 'x-forwarded-for': ip } });
          const [flood, real] = await Promise.all([
            Promise.all(Array.from({ length: 30 }, () => login(unique('ghost'), 'wrong-password', '203.0.113.5'))),
            login('admin', ADMIN_PASSWORD, '192.0.2.44'),
          ]);
          ok(real);
          const refused = flood.filter((r) => r.status === 429);
          assert.ok(refused.length >= 1, `some of the flood is refused: ${flood.map((r) => r.status).join()}`);
          for (const r of refused) assertError(r, 429, 'E4291', /too many logins at once/);
          assert.ok(flood.every((r) => r.status === 429 || r.status === 401));
        },
        { ...proxied, security: { scrypt_cost: 16384 } },
      ));

    test('addresses of one IPv6 /64 share a window; another /64 and an IPv4 client have their own', () =>
      withLimits(
        lane,
        [100, 3],
        async (t) => {
          const from = (ip: string) => t.request('GET', '/api/users', { headers: { 'x-forwarded-for': ip } });
          for (let i = 1; i <= 3; i++) assert.equal((await from(`2001:db8:1:2::${i}`)).status, 401);
          const rotated = await from('2001:db8:1:2:aaaa:bbbb:cccc:dddd');
          assert.equal(rotated.status, 429, 'a fresh address in the same /64 is the same client');
          assert.equal(rotated.body.code, 'E4291');
          assert.equal((await from('2001:db8:1:3::1')).headers['x-ratelimit-remaining'], '2');
          assert.equal((await from('198.51.100.7')).headers['x-ratelimit-remaining'], '2');
        },
        proxied,
      ));
  });
}

describe('rate limits switched off', () => {
  test('no headers and no 429 with rate_limit.enabled false', async () => {
    const t = await startConsole(lanes()[0]!, { rate_limit: { enabled: false, login_per_minute: 1 } });
    try {
      for (let i = 0; i < 3; i++) {
        const res = await t.request('POST', '/api/auth/login', { body: { username: 'x', password: 'y' } });
        assert.equal(res.status, 401);
        assert.equal(res.headers['x-ratelimit-limit'], undefined);
      }
    } finally {
      await t.close();
    }
  });
});
