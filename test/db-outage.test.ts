import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { RunnerContext } from '../engine/types.ts';
import { until } from './support/engine-node.ts';
import { captureLogs, startConsole, type Lane, type TestConsole } from './support/harness.ts';
import {
  startThrowaway,
  throwawayUnavailable,
  type ThrowawayKind,
  type ThrowawayServer,
} from './support/throwaway-db.ts';

/**
 * The database stopped for ~10 s under two running nodes with tasks in flight, then started again (README,
 * "Running in production"). Runs on private servers it starts and stops itself, never the shared CI ones.
 */
const OUTAGE_MS = 10_000;
const LEASE_TTL_MS = 3000;
const WRITE_TIMEOUT_MS = 3000;
const TASKS = 4;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface RunRecord {
  node: string;
  start: number;
  end: number;
  abortedAt: number;
}

/** A runner that holds its task until `released` (the database is back) or its signal fires, recording its span. */
function recordingRunner(node: string, runs: Map<string, RunRecord[]>, released: Promise<void>) {
  return async (ctx: RunnerContext) => {
    const record: RunRecord = { node, start: Date.now(), end: 0, abortedAt: 0 };
    runs.set(ctx.task.id, [...(runs.get(ctx.task.id) ?? []), record]);
    try {
      await new Promise<void>((resolve, reject) => {
        ctx.signal.addEventListener('abort', () => {
          record.abortedAt = Date.now();
          reject(ctx.signal.reason);
        });
        void released.then(resolve);
      });
      return node;
    } finally {
      record.end = Date.now();
    }
  };
}

for (const kind of ['postgres', 'mysql'] as ThrowawayKind[]) {
  const skip = throwawayUnavailable(kind);
  describe(`database outage under two nodes [${kind}]`, { skip }, () => {
    let server: ThrowawayServer;
    let a: TestConsole;
    let b: TestConsole;
    let adminA: string;
    let adminB: string;
    const logsB = captureLogs('warn');
    const runs = new Map<string, RunRecord[]>();
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let ids: string[] = [];
    const lane: Lane = { name: kind, database: () => server.database() };
    const overrides = {
      server: { write_timeout: `${WRITE_TIMEOUT_MS}ms` },
      // Short leases, so that the lease lapses within the outage.
      task: {
        lease_ttl: `${LEASE_TTL_MS}ms`,
        lease_renew_interval: '300ms',
        reaper_interval: '300ms',
        poll_interval: '200ms',
      },
    };

    before(async () => {
      server = await startThrowaway(kind);
      a = await startConsole(lane, overrides);
      b = await startConsole(
        lane,
        { ...overrides, database: a.database },
        { logger: logsB.logger },
        { keepTables: true },
      );
      adminA = await a.login();
      adminB = await b.login();
      const type = 'outage_job';
      a.c.engine.register(type, recordingRunner('a', runs, released));
      b.c.engine.register(type, recordingRunner('b', runs, released));
      for (let i = 0; i < TASKS; i++) ids.push((await a.c.engine.create({ type }))!.id);
      assert.ok(await until(() => ids.every((id) => runs.has(id)), 5000), 'every task runs before the outage');
    });
    after(async () => {
      release?.();
      await b?.close();
      await a?.close();
      await server?.destroy();
    });

    test('while the database is down: 503 E5031 in time, /readyz 503, /healthz 200, runners aborted within the lease', async () => {
      const stoppedAt = Date.now();
      await server.stop();
      try {
        await checkWhileDown(stoppedAt);
      } finally {
        await sleep(stoppedAt + OUTAGE_MS - Date.now());
        await server.start();
      }
    });

    async function checkWhileDown(stoppedAt: number): Promise<void> {
      const calls: [TestConsole, string, string, object?][] = [
        [a, 'GET', '/api/users'],
        [b, 'GET', '/api/users'],
        [a, 'POST', '/api/auth/login', { username: 'admin', password: 'whatever-1' }],
        [b, 'PUT', '/api/system/settings', { password_min_length: '12' }],
      ];
      for (let round = 0; round < 3; round++) {
        for (const [node, method, url, body] of calls) {
          const t0 = Date.now();
          const res = await node.request(method, url, { token: node === a ? adminA : adminB, body });
          assert.equal(res.status, 503, `${method} ${url}: ${res.text}`);
          assert.equal(res.body.code, 'E5031', res.text);
          assert.ok(
            Date.now() - t0 <= WRITE_TIMEOUT_MS + 1000,
            `${method} ${url} answered after ${Date.now() - t0} ms`,
          );
        }
        for (const node of [a, b]) {
          assert.equal((await node.request('GET', '/readyz')).status, 503);
          assert.equal((await node.request('GET', '/healthz')).status, 200);
        }
        await sleep(500);
      }
      // No renewal can have succeeded after the stop, so every lease ends by then at the latest.
      assert.ok(
        await until(() => ids.every((id) => runs.get(id)![0]!.abortedAt > 0), LEASE_TTL_MS + 2000),
        'every runner was aborted',
      );
      for (const id of ids) {
        const first = runs.get(id)![0]!;
        assert.ok(
          first.abortedAt - stoppedAt < LEASE_TTL_MS,
          `task ${id} aborted ${first.abortedAt - stoppedAt} ms after the stop`,
        );
        assert.equal(runs.get(id)!.length, 1, 'nothing runs again while the database is down');
      }
    }

    test('once it is back: normal answers within 5 s on both nodes, without a restart', async () => {
      const back = async (node: TestConsole, token: string) =>
        (await node.request('GET', '/api/users', { token })).status === 200 &&
        (await node.request('GET', '/readyz')).status === 200;
      assert.ok(
        await until(async () => (await back(a, adminA)) && (await back(b, adminB)), 5000, 100),
        'both nodes answer normally',
      );
    });

    test('a settings change made afterwards reaches the other node', async () => {
      const read = async () =>
        (await b.request('GET', '/api/system/settings', { token: adminB })).body.data?.password_min_length;
      assert.equal(
        (await a.request('PUT', '/api/system/settings', { token: adminA, body: { password_min_length: '20' } })).status,
        200,
      );
      assert.ok(await until(async () => (await read()) === '20', 3000, 50), 'the setting reached node B');
      if (kind === 'postgres')
        assert.ok(
          logsB.lines.some((l) => l.msg === 'change feed listening again'),
          'node B listens again',
        );
    });

    test('no task is lost and none ran twice at once', async () => {
      release();
      assert.ok(
        await until(
          async () => (await Promise.all(ids.map((id) => a.c.engine.get(id)))).every((t) => t?.status === 'success'),
          10_000,
          100,
        ),
        'every task finished',
      );
      for (const id of ids) {
        const spans = runs.get(id)!.sort((x, y) => x.start - y.start);
        assert.ok(spans.length >= 2, `task ${id} ran again after its lease lapsed`);
        for (let i = 1; i < spans.length; i++)
          assert.ok(spans[i]!.start >= spans[i - 1]!.end, `task ${id}: run ${i} started before run ${i - 1} ended`);
      }
    });
  });
}
