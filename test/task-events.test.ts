import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { createTRPCClient, httpSubscriptionLink, splitLink, httpLink } from '@trpc/client';
import { EventSource } from 'eventsource';
import type { AppRouter } from '../client.ts';
import { lanes, startConsole, type TestConsole } from './support/harness.ts';
import { openSse, type SseStream } from './support/sse.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A task type whose runs report progress and wait until the test lets them finish. */
function gatedRunner(t: TestConsole, type: string) {
  const gates = new Map<string, () => void>();
  t.c.engine.register(type, async (ctx) => {
    ctx.progress(50);
    await new Promise<void>((resolve) => gates.set(ctx.task.id, resolve));
    return { ok: true };
  });
  return {
    release: async (id: string) => {
      for (let i = 0; i < 200 && !gates.has(id); i++) await sleep(25);
      gates.get(id)!();
    },
  };
}

for (const lane of lanes()) {
  describe(`live task events [${lane.name}]`, () => {
    let t: TestConsole;
    let base: string;
    let admin: string;
    const streams: SseStream[] = [];
    const open = async (query = '', headers: Record<string, string> = {}) => {
      const s = await openSse(`${base}/api/tasks/events${query}`, headers);
      streams.push(s);
      return s;
    };
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    const ticketOf = async (token: string) => {
      const res = await t.request('POST', '/api/tasks/events/ticket', { token });
      assert.equal(res.status, 200, res.text);
      return res.body.data as { ticket: string; expires_at: string };
    };
    const taskEvent = (taskId: string, status?: string) => (e: { data: any }) =>
      e.data.task?.id === taskId && (!status || e.data.task.status === status);

    before(async () => {
      t = await startConsole(lane, { events: { max_streams_per_user: 3 } });
      const { port } = await t.c.listen();
      base = `http://127.0.0.1:${port}`;
      admin = await t.login();
    });
    afterEach(async () => {
      for (const s of streams.splice(0)) s.close();
      // The server ends them on its side as the connections close.
      await sleep(100);
    });
    after(async () => t?.close());

    test('no token and no ticket, a bad token or a bad query answer the envelope before any stream', async () => {
      for (const [query, headers, status, code] of [
        ['', {}, 401, 'E4011'],
        ['', { authorization: 'Bearer not-a-jwt' }, 401, 'E4011'],
        ['?ticket=nope', {}, 401, 'E4011'],
        ['?task_id=not-a-uuid', bearer(admin), 400, 'E4001'],
      ] as const) {
        const s = await open(query, headers);
        assert.equal(s.status, status, query);
        assert.equal(s.body.code, code, `${query}: ${JSON.stringify(s.body)}`);
        assert.match(s.headers.get('content-type') ?? '', /application\/json/);
      }
      const bad = await open('?task_id=not-a-uuid', bearer(admin));
      assert.match(bad.body.err, /task_id/);
    });

    test('the header opens a stream: retry hint, then each change of a visible task with its id', async () => {
      const s = await open('', bearer(admin));
      assert.equal(s.status, 200);
      assert.match(s.headers.get('content-type')!, /^text\/event-stream/);
      const task = (await t.c.engine.create({ type: 'never-runs', creatorId: null }))!;
      const e = await s.next(taskEvent(task.id, 'pending'));
      assert.ok(s.retry && s.retry > 0, 'retry hint');
      assert.match(e.id!, /^\d+$/);
      assert.equal(e.data.id, e.id);
      assert.deepEqual(Object.keys(e.data).sort(), ['id', 'task']);
      const viaApi = await t.request('GET', `/api/tasks/${task.id}`, { token: admin });
      assert.deepEqual(e.data.task, viaApi.body.data);
    });

    test('a ticket opens one stream once; a used or expired ticket answers 401 E4011', async () => {
      const { ticket, expires_at } = await ticketOf(admin);
      const ttl = Date.parse(expires_at) - Date.now();
      assert.ok(ttl > 50_000 && ttl <= 60_000, `valid 60 s (${ttl})`);
      const s = await open(`?ticket=${encodeURIComponent(ticket)}`);
      assert.equal(s.status, 200);
      const task = (await t.c.engine.create({ type: 'never-runs' }))!;
      await s.next(taskEvent(task.id));
      const again = await open(`?ticket=${encodeURIComponent(ticket)}`);
      assert.equal(again.status, 401);
      assert.equal(again.body.code, 'E4011');

      const old = await ticketOf(admin);
      await t.c.db
        .knex(t.c.db.t.eventTickets)
        .update({ expires_at: t.c.db.dialect.toDbTime(new Date(Date.now() - 1000)) });
      const expired = await open(`?ticket=${encodeURIComponent(old.ticket)}`);
      assert.equal(expired.status, 401);
      assert.equal(expired.body.code, 'E4011');
    });

    test('a user sees only their own tasks; X-Scope-OrgID limits to one organization', async () => {
      const a = await t.userWith(['task:list']);
      const b = await t.userWith(['task:list']);
      const none = await t.userWith([]);
      const refused = await open('', bearer(none.token));
      assert.equal(refused.status, 403);
      assert.equal(refused.body.code, 'E4031');

      const org = await t.request('POST', '/api/organizations', { token: admin, body: { name: `org-${Date.now()}` } });
      assert.equal(org.status, 201, org.text);
      const orgId = org.body.data.id as string;
      const sa = await open('', bearer(a.token));
      const sOrg = await open('', { ...bearer(admin), 'X-Scope-OrgID': orgId });
      const ticket = await ticketOf(admin);
      const sOrgTicket = await open(`?ticket=${ticket.ticket}&org_id=${orgId}`);
      assert.equal(sOrgTicket.status, 200);

      const ofB = (await t.c.engine.create({ type: 'never-runs', creatorId: b.id }))!;
      const ofA = (await t.c.engine.create({ type: 'never-runs', creatorId: a.id }))!;
      const inOrg = (await t.c.engine.create({ type: 'never-runs', creatorId: b.id, orgId }))!;
      await sa.next(taskEvent(ofA.id));
      await sOrg.next(taskEvent(inOrg.id));
      await sOrgTicket.next(taskEvent(inOrg.id));
      // Later events arrive in order, so the earlier ones would have been seen by now.
      const last = (await t.c.engine.create({ type: 'never-runs', creatorId: a.id, orgId }))!;
      await sa.next(taskEvent(last.id));
      await sOrg.next(taskEvent(last.id));
      assert.ok(!sa.events.some(taskEvent(ofB.id)) && !sa.events.some(taskEvent(inOrg.id)), 'no other user’s task');
      assert.ok(
        sa.events.every((e) => e.data.task.creator_id === a.id),
        'only the user’s own tasks',
      );
      assert.ok(!sOrg.events.some(taskEvent(ofA.id)) && !sOrg.events.some(taskEvent(ofB.id)), 'only the organization');
      assert.ok(sOrgTicket.events.every((e) => e.data.task.org_id === orgId));
      sa.close();
      sOrg.close();
      sOrgTicket.close();
    });

    test('a stream for one task starts with its current state, then follows it to the end', async () => {
      const gate = gatedRunner(t, 'gated-one');
      const task = (await t.c.engine.create({ type: 'gated-one', creatorId: null }))!;
      const s = await open(`?task_id=${task.id}`, bearer(admin));
      const first = await s.next(() => true);
      assert.equal(first.data.task.id, task.id);
      await s.next(taskEvent(task.id, 'running'));
      await s.next((e) => e.data.task.id === task.id && e.data.task.progress === 50, 5000, 'progress 50');
      await gate.release(task.id);
      const done = await s.next(taskEvent(task.id, 'success'));
      assert.equal(done.data.task.progress, 100);
      assert.ok(s.events.every((e) => e.data.task.id === task.id));
      s.close();
    });

    test('Last-Event-ID replays every status change since it; an unknown id starts from the current state', async () => {
      const gate = gatedRunner(t, 'gated-resume');
      const s = await open('', bearer(admin));
      const task = (await t.c.engine.create({ type: 'gated-resume', creatorId: null }))!;
      const pending = await s.next(taskEvent(task.id, 'pending'));
      s.close();
      await sleep(50);
      // While disconnected: running, progress, success.
      await gate.release(task.id);
      for (let i = 0; i < 100 && (await t.c.engine.get(task.id))!.status !== 'success'; i++) await sleep(50);
      const resumed = await open('', { ...bearer(admin), 'Last-Event-ID': pending.id! });
      await resumed.next(taskEvent(task.id, 'success'));
      const statuses = resumed.events.filter(taskEvent(task.id)).map((e) => e.data.task.status);
      assert.deepEqual(
        statuses.filter((x, i) => x !== statuses[i - 1]),
        ['running', 'success'],
      );
      assert.ok(
        resumed.events.every((e) => Number(e.id) > Number(pending.id)),
        'nothing from before the id',
      );

      const fresh = await open('', { ...bearer(admin), 'Last-Event-ID': '999999999999' });
      const current = await fresh.next(taskEvent(task.id, 'success'), 5000, 'current state');
      assert.match(current.id!, /^\d+$/);
      resumed.close();
      fresh.close();
    });

    test('events.max_streams_per_user streams at most per user: 429 E4291 beyond; the gauge counts them', async () => {
      const u = await t.userWith(['task:list']);
      const opened = [
        await open('', bearer(u.token)),
        await open('', bearer(u.token)),
        await open('', bearer(u.token)),
      ];
      for (const s of opened) assert.equal(s.status, 200);
      const over = await open('', bearer(u.token));
      assert.equal(over.status, 429);
      assert.equal(over.body.code, 'E4291');
      const metrics = await (await fetch(`${base}/metrics`)).text();
      assert.match(metrics, /events_streams_open\{transport="sse"\} [1-9]/);
      assert.match(metrics, /events_sent_total\{transport="sse"\} [1-9]/);
      opened[0]!.close();
      let again: SseStream | undefined;
      for (let i = 0; i < 40 && again?.status !== 200; i++) {
        again?.close();
        await sleep(50);
        again = await open('', bearer(u.token));
      }
      assert.equal(again!.status, 200);
      for (const s of opened) s.close();
      again!.close();
    });

    test('a session that ends (logout) closes its streams within 2 s', async () => {
      const u = await t.userWith(['task:list']);
      const s = await open('', bearer(u.token));
      const viaTicket = await open(`?ticket=${(await ticketOf(u.token)).ticket}`);
      assert.equal(viaTicket.status, 200);
      const t0 = performance.now();
      assert.equal((await t.request('POST', '/api/auth/logout', { token: u.token })).status, 200);
      await Promise.race([Promise.all([s.ended, viaTicket.ended]), sleep(2000).then(() => assert.fail('not closed'))]);
      assert.ok(performance.now() - t0 < 2000);
    });

    test('tasks.events through the real tRPC client: tracked ids, and resume from the last one', async () => {
      const url = `${base}/trpc`;
      const authed: typeof fetch = (input, init) =>
        fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...bearer(admin) } });
      const client = createTRPCClient<AppRouter>({
        links: [
          splitLink({
            condition: (op) => op.type === 'subscription',
            true: httpSubscriptionLink({ url, EventSource, eventSourceOptions: () => ({ fetch: authed }) }),
            false: httpLink({ url, headers: bearer(admin) }),
          }),
        ],
      });
      const gate = gatedRunner(t, 'gated-trpc');
      const task = (await t.c.engine.create({ type: 'gated-trpc', creatorId: null }))!;
      const seen: { id: string; status: string }[] = [];
      let failed: unknown;
      const sub = client.tasks.events.subscribe(
        { task_id: task.id },
        {
          onData: (e) => seen.push({ id: e.id, status: e.data.task.status }),
          onError: (error) => (failed = error),
        },
      );
      const waitFor = async (status: string) => {
        for (let i = 0; i < 200 && !seen.some((e) => e.status === status); i++) await sleep(25);
        assert.ok(
          seen.some((e) => e.status === status),
          `${status} via tRPC (${JSON.stringify(seen)}; ${failed})`,
        );
      };
      await waitFor('running');
      await gate.release(task.id);
      await waitFor('success');
      sub.unsubscribe();
      assert.ok(seen.every((e) => /^\d+$/.test(e.id)));
      const running = seen.find((e) => e.status === 'running')!;
      const replay: { id: string; status: string }[] = [];
      const resumed = client.tasks.events.subscribe(
        { task_id: task.id, lastEventId: running.id },
        { onData: (e) => replay.push({ id: e.id, status: e.data.task.status }) },
      );
      for (let i = 0; i < 200 && !replay.some((e) => e.status === 'success'); i++) await sleep(25);
      resumed.unsubscribe();
      assert.equal(replay.at(-1)?.status, 'success');
      assert.ok(
        replay.every((e) => Number(e.id) > Number(running.id)),
        `nothing before the id: ${JSON.stringify(replay)}`,
      );
    });
  });
}
