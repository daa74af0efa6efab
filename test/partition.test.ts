import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { RunnerContext } from '../engine/types.ts';
import { until } from './support/engine-node.ts';
import { lanes, startConsole, type TestConsole } from './support/harness.ts';
import { openSse, type SseStream } from './support/sse.ts';
import { startTcpProxy, type LinkMode, type TcpProxy } from './support/tcp-proxy.ts';

/**
 * Three nodes on one database, the third's link to it cut while it runs tasks, for three leases, then healed
 * (docs/engine.md, "Faults"): as a black hole (packets dropped, sockets open), as resets, and as a black hole
 * that lands while the node holds row locks in an open transaction.
 */
const LEASE_MS = 3000;
const ABORT_AT = 0.75;
const WRITE_TIMEOUT_MS = 2000;
const IDLE_TRANSACTION_MS = 1000;
const CUT_MS = 3 * LEASE_MS;
const RUN_MS = 4000;
const TASKS = 4;
const overrides = {
  server: { write_timeout: `${WRITE_TIMEOUT_MS}ms` },
  database: { dial_timeout: '1s', idle_transaction_timeout: `${IDLE_TRANSACTION_MS}ms`, lock_timeout: '3s' },
  task: {
    lease_ttl: `${LEASE_MS}ms`,
    lease_abort_at: ABORT_AT,
    lease_renew_interval: '500ms',
    reaper_interval: '300ms',
    poll_interval: '200ms',
  },
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Run {
  node: string;
  start: number;
  end: number;
  abortedAt: number;
}

/** A runner busy for RUN_MS unless its signal fires first, recording its span. */
function slowRunner(node: string, runs: Map<string, Run[]>) {
  return async (ctx: RunnerContext) => {
    const run: Run = { node, start: Date.now(), end: 0, abortedAt: 0 };
    runs.set(ctx.task.id, [...(runs.get(ctx.task.id) ?? []), run]);
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, RUN_MS);
        ctx.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          run.abortedAt = Date.now();
          reject(ctx.signal.reason);
        });
      });
      return node;
    } finally {
      run.end = Date.now();
    }
  };
}

/** The live event stream of a node, opened again with the last id seen whenever it ends. */
class ResumingStream {
  private stream: SseStream | undefined;
  private readonly seen = new Map<string, { taskId: string; status: string }>();
  private closed = false;
  resumed = 0;

  constructor(
    private readonly base: string,
    private readonly token: string,
  ) {}

  async open(): Promise<void> {
    let lastId: string | undefined;
    while (!this.closed) {
      const headers: Record<string, string> = { authorization: `Bearer ${this.token}` };
      if (lastId) headers['last-event-id'] = lastId;
      const s = await openSse(`${this.base}/api/tasks/events`, headers).catch(() => undefined);
      if (s?.status === 200) {
        this.stream = s;
        if (lastId) this.resumed++;
        let read = 0;
        const take = () => {
          for (; read < s.events.length; read++) {
            const e = s.events[read]!;
            if (e.id) lastId = e.id;
            // A replay after a resume repeats ids: each event counts once.
            if (e.id && e.data?.task) this.seen.set(e.id, { taskId: e.data.task.id, status: e.data.task.status });
          }
        };
        const poll = setInterval(take, 50);
        await s.ended;
        clearInterval(poll);
        take();
      }
      if (!this.closed) await sleep(200);
    }
  }

  /** The task's statuses in event order, a status repeated by progress events counted once. */
  statuses(taskId: string): string[] {
    const ordered = [...this.seen.entries()].sort(([a], [b]) => Number(a) - Number(b));
    const out: string[] = [];
    for (const [, e] of ordered) if (e.taskId === taskId && out.at(-1) !== e.status) out.push(e.status);
    return out;
  }

  close(): void {
    this.closed = true;
    this.stream?.close();
  }
}

for (const lane of lanes().filter((l) => l.name === 'postgres' || l.name === 'mysql')) {
  describe(`network partition of one node of three [${lane.name}]`, () => {
    let a: TestConsole;
    let b: TestConsole;
    let c: TestConsole;
    let proxy: TcpProxy;
    let adminA: string;
    let adminC: string;
    const streams: ResumingStream[] = [];

    before(async () => {
      a = await startConsole(lane, overrides);
      const shared = { ...overrides, database: { ...a.database, ...overrides.database } };
      b = await startConsole(lane, shared, {}, { keepTables: true });
      proxy = await startTcpProxy({ host: a.database.host!, port: Number(a.database.port) });
      c = await startConsole(
        lane,
        { ...shared, database: { ...shared.database, host: proxy.host, port: proxy.port } },
        {},
        { keepTables: true },
      );
      adminA = await a.login();
      adminC = await c.login();
    });
    after(async () => {
      for (const s of streams) s.close();
      proxy?.set('pass');
      await c?.close();
      await b?.close();
      await a?.close();
      await proxy?.close();
    });

    const cases: [string, LinkMode, boolean][] = [
      ['black hole', 'blackhole', false],
      ['resets', 'reset', false],
      ['black hole inside an open transaction', 'blackhole', true],
    ];
    for (const [name, mode, inTransaction] of cases)
      test(`cut as ${name} for three leases, then healed`, async (t) => {
        const type = `partition_${mode}_${inTransaction ? 'trx' : 'plain'}`;
        const runs = new Map<string, Run[]>();
        c.c.engine.register(type, slowRunner('c', runs));
        const streamA = await openStream(a, adminA);
        const streamC = await openStream(c, adminC);
        // Created where only the node to be cut off runs them.
        const ids: string[] = [];
        for (let i = 0; i < TASKS; i++) ids.push((await c.c.engine.create({ type }))!.id);
        assert.ok(
          await until(() => ids.every((id) => runs.get(id)?.[0]?.node === 'c'), 5000),
          'node C runs every task before the cut',
        );
        // Only now may the healthy nodes run them: they take them over once C's leases run out.
        a.c.engine.register(type, slowRunner('a', runs));
        b.c.engine.register(type, slowRunner('b', runs));

        // The setting's row exists, so that C's transaction can hold it locked.
        const first = await a.request('PUT', '/api/system/settings', {
          token: adminA,
          body: { password_min_length: '9' },
        });
        assert.equal(first.status, 200, first.text);
        const locks = inTransaction ? await holdLocks(ids) : undefined;
        const cutAt = Date.now();
        proxy.set(mode);
        const setting = String(10 + Math.floor(Math.random() * 50));
        let healAt = 0;
        const answers: number[] = [];
        try {
          // A healthy node writes a setting C's connection holds locked, if it does: it waits at most until the
          // server ends C's idle transaction.
          const put = await a.request('PUT', '/api/system/settings', {
            token: adminA,
            body: { password_min_length: setting },
          });
          assert.equal(put.status, 200, put.text);
          const putMs = Date.now() - cutAt;
          if (inTransaction) assert.ok(putMs < IDLE_TRANSACTION_MS + 2000, `the settings write took ${putMs} ms`);
          t.diagnostic(`settings write on a healthy node during the cut: ${putMs} ms`);
          while (Date.now() - cutAt < CUT_MS - WRITE_TIMEOUT_MS - 1500) {
            answers.push(...(await unavailableOnC()));
            await sleep(200);
          }
        } finally {
          await sleep(cutAt + CUT_MS - Date.now());
          proxy.set('pass');
          healAt = Date.now();
        }
        await locks?.done.catch(() => {});
        t.diagnostic(`C's answers during the cut: slowest ${Math.max(...answers)} ms of ${answers.length}`);

        const recovered = await recovery(healAt, setting);
        t.diagnostic(`after the heal: C answers in ${recovered.api} ms, has the setting in ${recovered.setting} ms`);
        assert.ok(
          await until(
            async () => (await Promise.all(ids.map((id) => a.c.engine.get(id)))).every((x) => x?.status === 'success'),
            10_000,
            100,
          ),
          'every task finished',
        );
        checkRuns(t, ids, runs, cutAt);
        await noStaleWrite(ids, runs);
        await sameTransitions(ids, streamA, streamC);
        t.diagnostic(`C's event stream resumed ${streamC.resumed} times`);
      });

    const bases = new Map<TestConsole, Promise<string>>();
    async function openStream(node: TestConsole, token: string): Promise<ResumingStream> {
      if (!bases.has(node))
        bases.set(
          node,
          node.c.listen().then(({ port }) => `http://127.0.0.1:${port}`),
        );
      const s = new ResumingStream(await bases.get(node)!, token);
      streams.push(s);
      void s.open();
      await sleep(300);
      return s;
    }

    /**
     * Opens a transaction on C that locks its running tasks' rows and the settings, and keeps it open through
     * the cut (the server ends it once it has sat idle for `idle_transaction_timeout`).
     */
    async function holdLocks(ids: string[]): Promise<{ done: Promise<unknown> }> {
      const { knex, t: tables, dialect } = c.c.db;
      let locked!: () => void;
      const held = new Promise<void>((r) => (locked = r));
      const done = knex.transaction(async (trx) => {
        await dialect.lockForUpdate(trx(tables.tasks).whereIn('id', ids).select('id'));
        await dialect.lockForUpdate(trx(tables.settings).select('*'));
        locked();
        await sleep(CUT_MS + 1000);
      });
      await Promise.race([held, done]);
      return { done };
    }

    /** One round of C's answers while it is cut off: each 503 E5031 within write_timeout plus a second. */
    async function unavailableOnC(): Promise<number[]> {
      const input = encodeURIComponent(JSON.stringify({ page: 1, page_size: 10 }));
      const calls: [string, string][] = [
        ['REST', '/api/tasks'],
        ['tRPC', `/trpc/tasks.list?input=${input}`],
        ['/readyz', '/readyz'],
      ];
      return Promise.all(
        calls.map(async ([what, url]) => {
          const t0 = Date.now();
          const res = await c.request('GET', url, { token: adminC });
          const ms = Date.now() - t0;
          assert.equal(res.status, 503, `${what}: ${res.text}`);
          // The envelope, or tRPC's error shape when the procedure itself failed; /readyz answers its status.
          if (what !== '/readyz')
            assert.equal(res.body.code ?? res.body.error?.appCode, 'E5031', `${what}: ${res.text}`);
          assert.ok(ms <= WRITE_TIMEOUT_MS + 1000, `${what} answered after ${ms} ms`);
          return ms;
        }),
      );
    }

    /** C answers normally within 5 s of the heal, and has the setting changed during the cut within 2 s. */
    async function recovery(healAt: number, setting: string): Promise<{ api: number; setting: number }> {
      const hasSetting = async () =>
        (await c.request('GET', '/api/system/settings', { token: adminC })).body.data?.password_min_length === setting;
      assert.ok(await until(hasSetting, 2000, 50), 'the setting reached C within 2 s of the heal');
      const settingMs = Date.now() - healAt;
      const normal = async () =>
        (await c.request('GET', '/api/tasks', { token: adminC })).status === 200 &&
        (await c.request('GET', '/readyz')).status === 200;
      assert.ok(await until(normal, 5000 - (Date.now() - healAt), 50), 'C answers normally within 5 s of the heal');
      return { api: Date.now() - healAt, setting: settingMs };
    }

    function checkRuns(t: { diagnostic(m: string): void }, ids: string[], runs: Map<string, Run[]>, cutAt: number) {
      const aborts: number[] = [];
      const reruns: number[] = [];
      for (const id of ids) {
        const spans = runs.get(id)!.sort((x, y) => x.start - y.start);
        const [first, ...rest] = spans;
        assert.ok(first!.abortedAt > 0, `task ${id}: C's run was aborted`);
        aborts.push(first!.abortedAt - cutAt);
        assert.ok(
          first!.abortedAt - cutAt < LEASE_MS,
          `task ${id}: C's run aborted ${first!.abortedAt - cutAt} ms into a ${LEASE_MS} ms lease`,
        );
        assert.equal(spans.filter((s) => !s.abortedAt).length, 1, `task ${id} ended exactly once`);
        assert.ok(rest.length > 0, `task ${id} ran again on a healthy node`);
        reruns.push(rest[0]!.start - first!.abortedAt);
        // The lease runs out, the reaper hands the task back (after the server ended C's transaction, which
        // held its row locked), and a healthy node claims it.
        assert.ok(
          rest[0]!.start - cutAt < LEASE_MS + IDLE_TRANSACTION_MS + 1000,
          `task ${id} ran again ${rest[0]!.start - cutAt} ms into the cut`,
        );
        for (let i = 1; i < spans.length; i++)
          assert.ok(spans[i]!.start >= spans[i - 1]!.end, `task ${id}: run ${i} started before run ${i - 1} ended`);
      }
      t.diagnostic(
        `C's runs aborted ${Math.min(...aborts)}–${Math.max(...aborts)} ms into the cut; run again ` +
          `${Math.min(...reruns)}–${Math.max(...reruns)} ms after the abort`,
      );
    }

    /** Each task's row holds the outcome of its one finished run, and nothing writes it after the heal. */
    async function noStaleWrite(ids: string[], runs: Map<string, Run[]>): Promise<void> {
      const rows = async () =>
        JSON.stringify(
          await a.c.db
            .knex(a.c.db.t.tasks)
            .whereIn('id', ids)
            .orderBy('id')
            .select('id', 'status', 'result', 'claim_id'),
        );
      const before = await rows();
      for (const row of JSON.parse(before) as { id: string; result: string }[]) {
        const finished = runs.get(row.id)!.find((r) => !r.abortedAt)!;
        assert.equal(JSON.parse(row.result), finished.node, `task ${row.id} holds its finished run's result`);
      }
      await sleep(LEASE_MS / 2);
      assert.equal(await rows(), before, 'no write after the tasks finished');
    }

    /** C's stream saw each task go through the same statuses as a healthy node's. */
    async function sameTransitions(ids: string[], streamA: ResumingStream, streamC: ResumingStream) {
      for (const id of ids) {
        assert.ok(
          await until(() => streamC.statuses(id).at(-1) === 'success', 5000),
          `C's stream saw task ${id} end: ${streamC.statuses(id).join(' → ')}`,
        );
        assert.deepEqual(streamC.statuses(id), streamA.statuses(id), `task ${id}`);
      }
    }
  });
}
