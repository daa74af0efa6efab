import assert from 'node:assert/strict';
import { after, afterEach, before, describe, mock, test } from 'node:test';
import { createTRPCClient, httpSubscriptionLink, splitLink, httpLink } from '@trpc/client';
import { EventSource } from 'eventsource';
import type { AppRouter } from '../client.ts';
import { pruneTaskEvents } from '../db/repositories/task-events.ts';
import { Subscription, type TaskEvent } from '../routers/task-events/subscription.ts';
import { frames } from '../server/http/task-events-route.ts';
import { lanes, startConsole, type TestConsole } from './support/harness.ts';
import { unique } from './support/identity.ts';
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

      // Past the retention the events since the id are gone: the stream starts from the current state instead.
      await pruneTaskEvents(t.c.db, new Date(Date.now() + 60_000));
      const late = await open('', { ...bearer(admin), 'Last-Event-ID': pending.id! });
      const state = await late.next(taskEvent(task.id), 5000, 'current state after pruning');
      assert.equal(state.data.task.status, 'success');
      assert.ok(!late.events.some(taskEvent(task.id, 'running')), 'no replay of pruned events');
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

    test('progress is coalesced to at most four events a second per task', async () => {
      t.c.engine.register('chatty', async (ctx) => {
        for (let p = 1; p <= 99; p++) {
          ctx.progress(p);
          await sleep(10);
        }
      });
      const task = (await t.c.engine.create({ type: 'chatty' }))!;
      const s = await open(`?task_id=${task.id}`, bearer(admin));
      const t0 = performance.now();
      await s.next(taskEvent(task.id, 'success'), 10_000);
      const seconds = (performance.now() - t0) / 1000;
      const progress = s.events.filter((e) => e.data.task.status === 'running').length;
      assert.ok(progress <= Math.ceil(seconds * 4) + 2, `${progress} running events in ${seconds.toFixed(2)} s`);
      const stored = await t.c.db.knex(t.c.db.t.taskEvents).where({ task_id: task.id, status: 'running' });
      assert.ok(stored.length <= Math.ceil(seconds * 4) + 2, `${stored.length} recorded`);
    });

    test('a deleted user’s streams close within 2 s', async () => {
      const u = await t.userWith(['task:list']);
      const s = await open('', bearer(u.token));
      assert.equal(s.status, 200);
      assert.equal((await t.request('DELETE', `/api/users/${u.id}`, { token: admin })).status, 200);
      await Promise.race([s.ended, sleep(2000).then(() => assert.fail('not closed'))]);
    });

    test('a disabled user’s streams close within 2 s', async () => {
      const u = await t.userWith(['task:list']);
      const s = await open('', bearer(u.token));
      assert.equal(s.status, 200);
      const body = { status: 'disabled' };
      assert.equal((await t.request('PUT', `/api/users/${u.id}`, { token: admin, body })).status, 200);
      await Promise.race([s.ended, sleep(2000).then(() => assert.fail('not closed'))]);
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

    /** An organization with a role of `permissions` there, and `user` a member holding it. */
    const orgWithMember = async (userId: string, permissions: string[]) => {
      const org = await t.request('POST', '/api/organizations', { token: admin, body: { name: `org-${unique()}` } });
      assert.equal(org.status, 201, org.text);
      const orgId = org.body.data.id as string;
      const role = await t.request('POST', '/api/roles', {
        token: admin,
        body: { name: `role-${unique()}`, permissions, org_id: orgId },
      });
      assert.equal(role.status, 201, role.text);
      const roleIds = permissions.length ? [role.body.data.id as string] : [];
      const member = await t.request('PUT', `/api/organizations/${orgId}/members`, {
        token: admin,
        body: { user_id: userId, role_ids: roleIds },
      });
      assert.equal(member.status, 200, member.text);
      return { orgId, roleId: role.body.data.id as string };
    };
    /** The tRPC subscription's own stream, as httpSubscriptionLink opens it. */
    const openTrpc = async (input: Record<string, unknown>, headers: Record<string, string>) => {
      const s = await openSse(`${base}/trpc/tasks.events?input=${encodeURIComponent(JSON.stringify(input))}`, headers);
      streams.push(s);
      return s;
    };
    const endsWithin2s = (s: SseStream, what: string) =>
      Promise.race([s.ended, sleep(2000).then(() => assert.fail(`${what}: not closed within 2 s`))]);
    /** A tRPC stream answers its errors as a `serialized-error` event (its HTTP status is 200 already). */
    const trpcError = async (s: SseStream) =>
      (await s.next((e) => typeof e.data?.appCode === 'string', 5000, 'tRPC error')).data as {
        appCode: string;
        message: string;
      };
    /** Both streams show a task of `userId` created in `orgId` (so they are open, in that organization). */
    const bothShow = async (userId: string, orgId: string, ...opened: SseStream[]) => {
      const task = (await t.c.engine.create({ type: 'never-runs', creatorId: userId, orgId }))!;
      for (const s of opened) await s.next((e) => e.data?.task?.id === task.id, 5000, 'a task of the organization');
    };

    test('X-Scope-OrgID and org_id that disagree answer 400 E4001 naming org_id, on both transports', async () => {
      const u = await t.userWith([]);
      const a = await orgWithMember(u.id, ['task:list']);
      const b = await orgWithMember(u.id, []);
      const inA = { ...bearer(u.token), 'X-Scope-OrgID': a.orgId };
      const sse = await open(`?org_id=${b.orgId}`, inA);
      assert.equal(sse.status, 400, JSON.stringify(sse.body));
      assert.equal(sse.body.code, 'E4001');
      assert.match(sse.body.err, /^org_id: /);
      const error = await trpcError(await openTrpc({ org_id: b.orgId }, inA));
      assert.equal(error.appCode, 'E4001', JSON.stringify(error));
      assert.match(error.message, /^org_id: /);
      // Agreeing (whatever the case of the id) is the one organization, whose permissions count.
      const same = await open(`?org_id=${a.orgId.toUpperCase()}`, inA);
      assert.equal(same.status, 200, JSON.stringify(same.body));
      await bothShow(u.id, a.orgId, same, await openTrpc({ org_id: a.orgId.toUpperCase() }, inA));
    });

    test('a stream’s permission is the organization in use: org_id alone counts that organization’s roles only', async () => {
      const u = await t.userWith([]);
      const a = await orgWithMember(u.id, ['task:list']);
      const b = await orgWithMember(u.id, []);
      const sse = await open(`?org_id=${a.orgId}`, bearer(u.token));
      assert.equal(sse.status, 200, JSON.stringify(sse.body));
      await bothShow(u.id, a.orgId, sse, await openTrpc({ org_id: a.orgId }, bearer(u.token)));
      for (const input of [{ org_id: b.orgId }, {}]) {
        const refused = await open(input.org_id ? `?org_id=${input.org_id}` : '', bearer(u.token));
        assert.equal(refused.status, 403, `SSE ${JSON.stringify(input)}: ${JSON.stringify(refused.body)}`);
        const error = await trpcError(await openTrpc(input, bearer(u.token)));
        assert.equal(error.appCode, 'E4031', `tRPC ${JSON.stringify(input)}`);
      }
    });

    test('a stream ends within 2 s when its user loses task:list: a role edited, roles replaced, a membership changed', async () => {
      const role = await t.request('POST', '/api/roles', {
        token: admin,
        body: { name: `role-${unique()}`, permissions: ['task:list', 'task:view'] },
      });
      assert.equal(role.status, 201, role.text);
      const roleId = role.body.data.id as string;
      const other = await t.request('POST', '/api/roles', {
        token: admin,
        body: { name: `role-${unique()}`, permissions: ['task:view'] },
      });
      const name = unique();
      const created = await t.request('POST', '/api/users', {
        token: admin,
        body: { username: name, email: `${name}@example.test`, password: 'password-1', role_ids: [roleId] },
      });
      assert.equal(created.status, 201, created.text);
      const userId = created.body.data.id as string;
      const login = await t.request('POST', '/api/auth/login', { body: { username: name, password: 'password-1' } });
      const token = login.body.data.token as string;
      const pair = async () => {
        const s = await open('', bearer(token));
        const r = await openTrpc({}, bearer(token));
        assert.equal(s.status, 200, JSON.stringify(s.body));
        const task = (await t.c.engine.create({ type: 'never-runs', creatorId: userId }))!;
        for (const x of [s, r]) await x.next(taskEvent(task.id));
        return [s, r] as const;
      };

      // The role loses the permission.
      let [sse, trpc] = await pair();
      const keep = await open('', bearer(admin));
      let res = await t.request('PUT', `/api/roles/${roleId}`, { token: admin, body: { permissions: ['task:view'] } });
      assert.equal(res.status, 200, res.text);
      await Promise.all([endsWithin2s(sse, 'SSE, role edited'), endsWithin2s(trpc, 'tRPC, role edited')]);
      const refused = await open('', bearer(token));
      assert.equal(refused.status, 403);

      // The user's roles are replaced by one without it.
      res = await t.request('PUT', `/api/roles/${roleId}`, { token: admin, body: { permissions: ['task:list'] } });
      assert.equal(res.status, 200, res.text);
      [sse, trpc] = await pair();
      const body = { role_ids: [other.body.data.id] };
      res = await t.request('PUT', `/api/users/${userId}`, { token: admin, body });
      assert.equal(res.status, 200, res.text);
      await Promise.all([endsWithin2s(sse, 'SSE, roles replaced'), endsWithin2s(trpc, 'tRPC, roles replaced')]);

      // Held in an organization only: the membership loses the role there.
      const org = await orgWithMember(userId, ['task:list']);
      const inOrg = await open('', { ...bearer(token), 'X-Scope-OrgID': org.orgId });
      const inOrgTrpc = await openTrpc({ org_id: org.orgId }, bearer(token));
      assert.equal(inOrg.status, 200, JSON.stringify(inOrg.body));
      await bothShow(userId, org.orgId, inOrg, inOrgTrpc);
      res = await t.request('PUT', `/api/organizations/${org.orgId}/members`, {
        token: admin,
        body: { user_id: userId, role_ids: [] },
      });
      assert.equal(res.status, 200, res.text);
      await Promise.all([
        endsWithin2s(inOrg, 'SSE, membership changed'),
        endsWithin2s(inOrgTrpc, 'tRPC, membership changed'),
      ]);
      // Streams whose user keeps the permission stay open.
      await sleep(200);
      const task = (await t.c.engine.create({ type: 'never-runs' }))!;
      await keep.next(taskEvent(task.id));
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

for (const lane of lanes()) {
  describe(`live task events at shutdown [${lane.name}]`, () => {
    test('open streams end at once, so shutdown does not wait for them', async () => {
      const t = await startConsole(lane, { server: { shutdown_timeout: '20s' } });
      const { port } = await t.c.listen();
      const admin = await t.login();
      const s = await openSse(`http://127.0.0.1:${port}/api/tasks/events`, { authorization: `Bearer ${admin}` });
      // The tRPC subscription's own stream, as httpSubscriptionLink opens it.
      const trpc = await openSse(`http://127.0.0.1:${port}/trpc/tasks.events`, { authorization: `Bearer ${admin}` });
      try {
        assert.equal(s.status, 200);
        assert.equal(trpc.status, 200);
        const task = (await t.c.engine.create({ type: 'never-runs' }))!;
        await s.next((e) => e.data.task.id === task.id);
        await trpc.next((e) => e.data?.task?.id === task.id);
        const t0 = performance.now();
        await t.close();
        await Promise.all([s.ended, trpc.ended]);
        // Well under server.shutdown_timeout, which a stream holding the drain would have taken.
        assert.ok(performance.now() - t0 < 10_000, `closed in ${Math.round(performance.now() - t0)} ms`);
      } finally {
        s.close();
        trpc.close();
      }
    });
  });
}

for (const lane of lanes().filter((l) => l.name === 'postgres' || l.name === 'mysql')) {
  describe(`live task events across nodes [${lane.name}]`, () => {
    let a: TestConsole;
    let b: TestConsole;
    let s: SseStream;
    let port: number;

    before(async () => {
      a = await startConsole(lane);
      b = await startConsole(lane, { database: a.database }, {}, { keepTables: true });
      ({ port } = await a.c.listen());
      s = await openSse(`http://127.0.0.1:${port}/api/tasks/events`, { authorization: `Bearer ${await a.login()}` });
      assert.equal(s.status, 200);
    });
    after(async () => {
      s?.close();
      await b?.close();
      await a?.close();
    });

    test('a stream on node A ends within 2 s when its user loses task:list through node B', async () => {
      const token = await a.login();
      const role = await a.request('POST', '/api/roles', {
        token,
        body: { name: `role-${unique()}`, permissions: ['task:list'] },
      });
      assert.equal(role.status, 201, role.text);
      const name = unique();
      const user = await a.request('POST', '/api/users', {
        token,
        body: { username: name, email: `${name}@example.test`, password: 'password-1', role_ids: [role.body.data.id] },
      });
      assert.equal(user.status, 201, user.text);
      const login = await a.request('POST', '/api/auth/login', { body: { username: name, password: 'password-1' } });
      const headers = { authorization: `Bearer ${login.body.data.token}` };
      const base = `http://127.0.0.1:${port}`;
      const sse = await openSse(`${base}/api/tasks/events`, headers);
      const trpc = await openSse(`${base}/trpc/tasks.events`, headers);
      try {
        const task = (await a.c.engine.create({ type: 'never-runs', creatorId: user.body.data.id }))!;
        for (const x of [sse, trpc]) await x.next((e) => e.data?.task?.id === task.id);
        const body = { permissions: ['task:view'] };
        const edited = await b.request('PUT', `/api/roles/${role.body.data.id}`, { token: await b.login(), body });
        assert.equal(edited.status, 200, edited.text);
        await Promise.race([
          Promise.all([sse.ended, trpc.ended]),
          sleep(2000).then(() => assert.fail('not closed within 2 s')),
        ]);
      } finally {
        sse.close();
        trpc.close();
      }
    });

    test('a task running on node B is seen by a stream on node A, each status soon after B wrote it', async () => {
      // A task only B runs: its claim, progress and outcome are all written (and recorded) on B.
      const gate = gatedRunner(b, 'on-b-only');
      const emitted = new Map<string, number>();
      const off = b.c.engine.changes.onChange((task) => {
        if (!emitted.has(task.status)) emitted.set(task.status, performance.now());
      });
      const task = (await b.c.engine.create({ type: 'on-b-only' }))!;
      const seenAt = async (status: string) => {
        await s.next((e) => e.data.task.id === task.id && e.data.task.status === status, 10_000, status);
        return performance.now();
      };
      const running = await seenAt('running');
      await gate.release(task.id);
      const success = await seenAt('success');
      off();
      const limit = lane.name === 'postgres' ? 1000 : 2000;
      for (const [status, at] of [
        ['running', running],
        ['success', success],
      ] as const) {
        const delay = at - emitted.get(status)!;
        assert.ok(delay < limit, `${status} seen on A ${Math.round(delay)} ms after B wrote it (limit ${limit})`);
      }
      assert.equal(a.c.engine.isRunningHere(task.id), false);
    });
  });
}

describe('live task event streams, without a database', () => {
  const event = (id: number, task: string, progress = 0) =>
    ({ id: String(id), task: { id: task, status: 'running', progress } }) as unknown as TaskEvent;

  test('a client that does not read keeps at most 1,000 events: each task’s latest, or it is closed', () => {
    const sub = new Subscription();
    for (let i = 1; i <= 5000; i++) sub.push(event(i, `task-${i % 10}`, i % 100));
    const held = (sub as unknown as { held: TaskEvent[] }).held;
    assert.ok(held.length <= 1000, `${held.length} held`);
    assert.equal(held.at(-1)!.id, '5000');
    assert.equal(sub.closed, false);

    const many = new Subscription();
    for (let i = 1; i <= 1100; i++) many.push(event(i, `task-${i}`));
    assert.equal(many.closed, true);
    assert.equal(many.reason, 'overflowed');
  });

  test('a stream never steps back to an older state of a task that the log numbered later', () => {
    const at = (id: number, status: string, ms: number, progress = 0) =>
      ({ id: String(id), task: { id: 't', status, progress, updated_at: new Date(ms).toISOString() } }) as TaskEvent;
    const sub = new Subscription();
    sub.push(at(10, 'running', 2000, 30)); // the current state the stream started from
    sub.push(at(11, 'pending', 1000)); // stored before that state was read, numbered after it
    sub.push(at(12, 'running', 2000, 20)); // progress of the same run, older than the starting state
    sub.push(at(13, 'running', 2000, 40));
    sub.push(at(14, 'success', 3000, 100)); // another node's outcome, recorded before...
    sub.push(at(15, 'pending', 2500)); // ...a retry-less pending this node recorded late
    sub.push(at(16, 'pending', 4000)); // a manual retry after the outcome is newer, and goes out
    const held = (sub as unknown as { held: TaskEvent[] }).held;
    assert.deepEqual(
      held.map((e) => e.id),
      ['10', '13', '14', '16'],
    );
  });

  test('the stream starts with a retry hint and sends a ping comment every 15 s while quiet', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const sub = new Subscription();
      const out = frames(sub, () => {});
      assert.match((await out.next()).value as string, /^retry: \d+\n\n$/);
      const ping = out.next();
      // (setTimeout is mocked: a turn of the event loop lets the generator arm its heartbeat.)
      await new Promise((resolve) => setImmediate(resolve));
      mock.timers.tick(15_000);
      assert.equal((await ping).value, ': ping\n\n');
      sub.push(event(7, 'task-a', 40));
      assert.equal(
        (await out.next()).value,
        `id: 7\ndata: ${JSON.stringify({ id: '7', task: { id: 'task-a', status: 'running', progress: 40 } })}\n\n`,
      );
      sub.close();
      assert.equal((await out.next()).done, true);
    } finally {
      mock.timers.reset();
    }
  });
});
