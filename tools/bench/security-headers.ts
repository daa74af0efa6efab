// node --import tsx tools/bench/security-headers.ts — server/http/security-headers.ts beside @fastify/helmet set
// to send the same four headers, in one run, printing the ratio. Each is the only hook of a Fastify app with one
// small route on loopback; one client sends requests one after another on a kept-alive connection, so the
// difference from the app without headers is the headers' own cost per request. (Fastify's `inject` was not used:
// its memory grows with every request here, which slows whichever app is measured later.)
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import helmet from '@fastify/helmet';
import Fastify, { type FastifyInstance } from 'fastify';
import { securityHeaders } from '../../server/http/security-headers.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const OPS = Number(process.env.BENCH_OPS ?? 5000);

/** helmet's options for exactly what security-headers.ts sends, nothing else. */
const SAME_HEADERS = {
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  referrerPolicy: { policy: 'no-referrer' as const },
  xFrameOptions: { action: 'deny' as const },
  xContentTypeOptions: true,
  crossOriginEmbedderPolicy: false,
  crossOriginOpenerPolicy: false,
  crossOriginResourcePolicy: false,
  originAgentCluster: false,
  strictTransportSecurity: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xPoweredBy: false,
  xXssProtection: false,
};

async function app(withHeaders: (app: FastifyInstance) => Promise<void>): Promise<FastifyInstance> {
  const a = Fastify();
  await withHeaders(a);
  a.get('/x', async () => 'ok');
  await a.listen({ host: '127.0.0.1', port: 0 });
  return a;
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });
function get(a: FastifyInstance): Promise<Record<string, string | string[] | undefined>> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: (a.server.address() as AddressInfo).port, path: '/x', agent },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.headers));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const apps: Record<string, FastifyInstance> = {
  'no headers': await app(async () => {}),
  'security-headers.ts': await app(async (a) => {
    a.addHook('onRequest', (request, reply, done) => {
      securityHeaders.onRequest!(request, reply);
      done();
    });
  }),
  '@fastify/helmet': await app(async (a) => {
    await a.register(helmet, SAME_HEADERS);
  }),
};

const seen: Record<string, string> = {};
for (const [name, a] of Object.entries(apps)) {
  const headers = await get(a);
  // helmet writes the CSP without spaces after its semicolons: the same policy.
  seen[name] = ['content-security-policy', 'referrer-policy', 'x-frame-options', 'x-content-type-options']
    .map((h) => `${h}=${String(headers[h]).replace(/;\s*/g, ';')}`)
    .join(' ');
}
if (seen['security-headers.ts'] !== seen['@fastify/helmet'])
  throw new Error(`headers differ:\n${seen['security-headers.ts']}\n${seen['@fastify/helmet']}`);

const best: Record<string, number> = {};
for (let round = -1; round < ROUNDS; round++) {
  for (const [name, a] of Object.entries(apps)) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < OPS; i++) await get(a);
    const us = Number(process.hrtime.bigint() - start) / 1000 / OPS;
    if (round >= 0) best[name] = Math.min(best[name] ?? Infinity, us);
  }
}
const base = best['no headers']!;
console.log(
  `µs per request, best of ${ROUNDS} rounds of ${OPS.toLocaleString('en')} (same headers: ${seen['@fastify/helmet']})`,
);
for (const [name, us] of Object.entries(best))
  console.log(`  ${name.padEnd(20)} ${us.toFixed(2).padStart(6)}   headers' own cost ${(us - base).toFixed(2)}`);
const ours = best['security-headers.ts']! - base;
const theirs = best['@fastify/helmet']! - base;
console.log(`ratio of the headers' own cost, @fastify/helmet / security-headers.ts: ${(theirs / ours).toFixed(1)}`);
agent.destroy();
await Promise.all(Object.values(apps).map((a) => a.close()));
