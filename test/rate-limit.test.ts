import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { clientNetwork } from '../server/http/client-network.ts';
import { RateLimiter } from '../server/http/rate-limit.ts';
import { lanes, startConsole } from './support/harness.ts';

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

for (const lane of lanes()) {
  describe(`rate limits [${lane.name}]`, () => {
    test('login per client IP + username: headers, 429 E4291, other usernames unaffected', async () => {
      const t = await startConsole(lane, {
        rate_limit: { enabled: true, login_per_minute: 3, global_per_minute: 1000 },
      });
      try {
        const login = (username: string) =>
          t.request('POST', '/api/auth/login', { body: { username, password: 'wrong-password' } });
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
      } finally {
        await t.close();
      }
    });

    test('global limit per client IP, and per user when authenticated', async () => {
      const t = await startConsole(lane, {
        rate_limit: { enabled: true, login_per_minute: 100, global_per_minute: 5 },
      });
      try {
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
      } finally {
        await t.close();
      }
    });

    test('addresses of one IPv6 /64 share a window; another /64 and an IPv4 client have their own', async () => {
      const t = await startConsole(lane, {
        server: { trust_proxy: true },
        rate_limit: { enabled: true, login_per_minute: 100, global_per_minute: 3 },
      });
      try {
        const from = (ip: string) => t.request('GET', '/api/users', { headers: { 'x-forwarded-for': ip } });
        for (let i = 1; i <= 3; i++) assert.equal((await from(`2001:db8:1:2::${i}`)).status, 401);
        const rotated = await from('2001:db8:1:2:aaaa:bbbb:cccc:dddd');
        assert.equal(rotated.status, 429, 'a fresh address in the same /64 is the same client');
        assert.equal(rotated.body.code, 'E4291');
        assert.equal((await from('2001:db8:1:3::1')).headers['x-ratelimit-remaining'], '2');
        assert.equal((await from('198.51.100.7')).headers['x-ratelimit-remaining'], '2');
      } finally {
        await t.close();
      }
    });
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
