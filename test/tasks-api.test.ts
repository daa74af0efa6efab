import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { findFile } from '../db/repositories/files.ts';
import { lanes, startConsole, type TestConsole } from './support/harness.ts';
import { until } from './support/engine-node.ts';

const TASK_PERMS = ['task:list', 'task:view', 'task:cancel', 'task:retry', 'task:delete'];

for (const lane of lanes()) {
  describe(`tasks, schedules and files over HTTP [${lane.name}]`, () => {
    let t: TestConsole;
    let admin: string;
    let failedRuns = 0;
    before(async () => {
      t = await startConsole(lane);
      admin = await t.login();
      // A runner that waits until cancelled; a runner that fails once.
      t.c.engine.register(
        'api_wait',
        (ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
      );
      t.c.engine.register('api_fail', async () => {
        failedRuns++;
        throw new Error('nope');
      });
    });
    after(() => t.close());

    const waitStatus = async (id: string, status: string, token = admin) => {
      let last = '';
      const ok = await until(
        async () => (last = (await t.request('GET', `/api/tasks/${id}`, { token })).body.data?.status) === status,
        10_000,
      );
      assert.ok(ok, `task ${id} is ${last}, not ${status}`);
      return (await t.request('GET', `/api/tasks/${id}`, { token })).body.data;
    };

    const audits = async (action: string, resourceId: string) =>
      (await t.request('GET', `/api/audit-logs?action=${action}&page_size=100`, { token: admin })).body.data.filter(
        (a: { resource_id: string }) => a.resource_id === resourceId,
      );

    test('user export: a task answered at once, a CSV artifact, downloads for the creator and admins only', async () => {
      const op = await t.userWith(['user:export', 'task:view']);
      const other = await t.userWith([...TASK_PERMS, 'user:list']);
      const res = await t.request('POST', '/api/authorization/users/export', { token: op.token });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.type, 'user_export');
      assert.equal(res.body.data.category, 'user');
      assert.equal(res.body.data.creator_id, op.id);
      assert.equal(res.body.data.max_retries, 1);
      const task = await waitStatus(res.body.data.id, 'success', op.token);
      assert.equal(task.progress, 100);
      assert.match(task.artifact_file_name, /^users_export_\d{8}_\d{6}\.csv$/);
      assert.equal((await audits('export', task.id)).length, 1);

      const url = `/api/files/${task.artifact_file_key}`;
      const mine = await t.request('GET', url, { token: op.token });
      assert.equal(mine.status, 200);
      assert.match(String(mine.headers['content-type']), /^text\/csv/);
      const documented = (await t.request('GET', '/api/openapi.json')).body.paths['/files/{fileKey}'].get.responses[
        '200'
      ].content;
      assert.ok(
        documented[String(mine.headers['content-type'])],
        `${mine.headers['content-type']} is documented for the download`,
      );
      assert.match(String(mine.headers['content-disposition']), new RegExp(`filename="${task.artifact_file_name}"`));
      const lines = mine.text.trim().split('\r\n');
      assert.equal(lines[0], 'id,username,email,status,roles,created_at');
      assert.ok(lines.some((l) => l.includes(',admin,admin@example.com,active,admin,')));
      assert.ok(lines.some((l) => l.startsWith(`${other.id},${other.username},`)));
      assert.equal((await t.request('GET', url, { token: admin })).status, 200, 'an admin may download');

      const stranger = await t.request('GET', url, { token: other.token });
      assert.equal(stranger.status, 404);
      assert.equal(stranger.body.code, 'E4041');
      const anonymous = await t.request('GET', url);
      assert.equal(anonymous.status, 401);
      assert.equal(anonymous.body.code, 'E4011');
      assert.equal((await t.request('GET', `/api/files/nope`, { token: admin })).status, 404);

      const signed = await t.request('GET', `${url}?method=sign`, { token: op.token });
      assert.equal(signed.status, 200);
      const expiresIn = Date.parse(signed.body.data.expires_at) - Date.now();
      assert.ok(expiresIn > 9 * 60_000 && expiresIn <= 10 * 60_000, `valid ${expiresIn} ms`);
      const viaLink = await t.request('GET', signed.body.data.url);
      assert.equal(viaLink.status, 200, 'a signed URL needs no token');
      assert.equal(viaLink.text, mine.text);
      assert.equal(
        (await t.request('GET', `${url}?method=sign`, { token: other.token })).status,
        404,
        'signing needs the same access',
      );
      const tampered = signed.body.data.url.replace(
        /signature=([0-9a-f])/,
        (_: string, c: string) => `signature=${c === '0' ? '1' : '0'}`,
      );
      assert.equal((await t.request('GET', tampered)).body.code, 'E4011');
      const file = (await findFile(t.c.db, task.artifact_file_key))!;
      const stale = t.c.services.files.sign(file, Date.now() - 11 * 60_000);
      assert.equal((await t.request('GET', stale.url)).status, 401, 'an expired link is refused');
      const renewed = await t.request('GET', `${signed.body.data.url}&method=sign`);
      assert.equal(renewed.status, 401, 'a signed link cannot sign itself again (it would never expire)');
      assert.equal(renewed.body.code, 'E4011');

      await rm(join(t.c.config.server.file_upload_path, file.path));
      const gone = await t.request('GET', url, { token: admin });
      assert.equal(gone.status, 404, 'a file missing from disk is not found, not a broken download');
      assert.equal(gone.body.code, 'E4041');
    });

    test('a burst of exports each cancelled at once: a 200 always ends cancelled without a file, a 400 names the final status', async () => {
      const op = await t.userWith(['user:export', 'task:view', 'task:cancel']);
      // As many as one user may have pending or running (quota.active_user_tasks, default 10).
      const answers = await Promise.all(
        Array.from({ length: 10 }, async () => {
          const created = await t.request('POST', '/api/authorization/users/export', { token: op.token });
          assert.equal(created.status, 200);
          return {
            id: created.body.data.id as string,
            cancel: await t.request('POST', `/api/tasks/${created.body.data.id}/cancel`, { token: op.token }),
          };
        }),
      );
      for (const { id, cancel } of answers) {
        if (cancel.status === 200) {
          const task = await waitStatus(id, 'cancelled', op.token);
          assert.equal(task.artifact_file_key, null, 'a cancelled export keeps no file');
          assert.equal(task.result, null);
        } else {
          assert.equal(cancel.status, 400, cancel.text);
          assert.equal(cancel.body.code, 'E4001');
          const task = (await t.request('GET', `/api/tasks/${id}`, { token: op.token })).body.data;
          assert.ok(['success', 'failed', 'cancelled'].includes(task.status));
          assert.equal(
            cancel.body.err,
            `cannot cancel a task that is ${task.status}`,
            'the 400 names the status the task ended with',
          );
        }
      }
      const files = (await t.c.db
        .knex(t.c.db.t.files)
        .whereIn(
          'task_id',
          answers.map((a) => a.id),
        )
        .select('task_id')) as { task_id: string }[];
      const kept = new Set(answers.filter((a) => a.cancel.status !== 200).map((a) => a.id));
      assert.deepEqual(
        files.filter((f) => !kept.has(f.task_id)),
        [],
        'no export answered cancelled left a file row',
      );
    });

    test('visibility: others see only their own tasks, not visible answers 404; admins see everything', async () => {
      const a = await t.userWith([...TASK_PERMS, 'user:export']);
      const b = await t.userWith([...TASK_PERMS]);
      const mine = (await t.request('POST', '/api/authorization/users/export', { token: a.token })).body.data;
      const theirs = (await t.c.engine.create({ type: 'api_none', creatorId: b.id }))!;

      const listA = await t.request('GET', '/api/tasks?page_size=100', { token: a.token });
      assert.equal(listA.status, 200);
      assert.deepEqual(
        listA.body.data.map((x: { id: string }) => x.id),
        [mine.id],
      );
      assert.equal(listA.body.total, 1);
      assert.equal((await t.request('GET', `/api/tasks/${theirs.id}`, { token: a.token })).status, 404);
      assert.equal((await t.request('POST', `/api/tasks/${theirs.id}/cancel`, { token: a.token })).status, 404);
      assert.equal((await t.request('DELETE', `/api/tasks/${theirs.id}`, { token: a.token })).status, 404);
      assert.equal((await t.request('GET', `/api/tasks/${theirs.id}/logs`, { token: a.token })).status, 404);

      const all = await t.request('GET', `/api/tasks?search=${theirs.id.slice(-12).toUpperCase()}`, { token: admin });
      assert.deepEqual(
        all.body.data.map((x: { id: string }) => x.id),
        [theirs.id],
        'search matches the id',
      );
      const byType = await t.request('GET', '/api/tasks?search=API_NONE', { token: admin });
      assert.ok(
        byType.body.data.some((x: { id: string }) => x.id === theirs.id),
        'search on type, case-insensitive',
      );
      assert.equal((await t.request('GET', '/api/tasks/not-a-uuid', { token: admin })).body.code, 'E4001');

      const recent = await t.request('GET', '/api/user-tasks', { token: b.token });
      assert.equal(recent.status, 200);
      assert.deepEqual(
        recent.body.data.map((x: { id: string }) => x.id),
        [theirs.id],
      );
      assert.equal(recent.body.total, undefined, 'a plain list');
    });

    test('the list filters by status and type on the server, counts what matches, documents both, names a bad value', async () => {
      // No runner has this type, so its tasks stay pending until cancelled.
      const type = `api_filter_${Date.now()}`;
      const done = (await t.c.engine.create({ type, creatorId: null }))!;
      await new Promise((resolve) => setTimeout(resolve, 5));
      const queued = (await t.c.engine.create({ type, creatorId: null }))!;
      assert.equal((await t.request('POST', `/api/tasks/${done.id}/cancel`, { token: admin })).status, 200);
      const ids = async (query: string) => {
        const res = await t.request('GET', `/api/tasks?page_size=100&${query}`, { token: admin });
        assert.equal(res.status, 200, res.text);
        return { ids: res.body.data.map((x: { id: string }) => x.id), total: res.body.total };
      };
      assert.deepEqual(await ids(`type=${type}`), { ids: [queued.id, done.id], total: 2 });
      assert.deepEqual(await ids(`type=${type}&status=cancelled`), { ids: [done.id], total: 1 });
      assert.deepEqual(await ids(`type=${type}&status=pending`), { ids: [queued.id], total: 1 });
      const cancelled = await ids('status=cancelled');
      assert.ok(cancelled.ids.includes(done.id) && !cancelled.ids.includes(queued.id));

      const bad = await t.request('GET', '/api/tasks?status=done', { token: admin });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.code, 'E4001');
      assert.match(bad.body.err, /status/);
      const params = (await t.request('GET', '/api/openapi.json')).body.paths['/tasks'].get.parameters.map(
        (p: { name: string }) => p.name,
      );
      assert.ok(params.includes('status') && params.includes('type'), params.join(', '));
    });

    test('counts: pending and running now, failed in the last 24 h, of the tasks the caller sees', async () => {
      const c = await t.userWith([...TASK_PERMS]);
      const counts = async (token: string) => (await t.request('GET', '/api/tasks/counts', { token })).body.data;
      assert.deepEqual(await counts(c.token), { pending: 0, running: 0, success: 0, failed: 0, cancelled: 0 });
      const adminBefore = await counts(admin);
      const running = (await t.c.engine.create({ type: 'api_wait', creatorId: c.id }))!;
      const failed = (await t.c.engine.create({ type: 'api_fail', creatorId: c.id, maxRetries: 0 }))!;
      await waitStatus(running.id, 'running');
      await waitStatus(failed.id, 'failed');
      const others = (await t.c.engine.create({ type: 'api_wait', creatorId: null }))!;
      assert.deepEqual(await counts(c.token), { pending: 0, running: 1, success: 0, failed: 1, cancelled: 0 });
      const adminAfter = await counts(admin);
      assert.ok(adminAfter.failed === adminBefore.failed + 1, 'an administrator counts every task');
      assert.ok(adminAfter.pending + adminAfter.running >= adminBefore.pending + adminBefore.running + 2);
      assert.equal((await t.request('GET', '/api/tasks/counts', { token: (await t.userWith([])).token })).status, 403);
      for (const task of [running, others]) await t.request('POST', `/api/tasks/${task.id}/cancel`, { token: admin });
    });

    test("an administrator's list counts every live task and no deleted one, newest first, read whole", async () => {
      const total = async () => (await t.request('GET', '/api/tasks?page_size=1', { token: admin })).body.total;
      const before = await total();
      const made = [];
      for (let i = 0; i < 3; i++) {
        made.push((await t.c.engine.create({ type: 'api_none', creatorId: null }))!);
        // Apart by a few milliseconds, so that newest first is one order whatever the ids.
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      assert.equal((await t.request('DELETE', `/api/tasks/${made[1]!.id}`, { token: admin })).status, 200);
      assert.equal(await total(), before + 2, 'the deleted task is not counted');
      const live = (await t.c.db.knex(t.c.db.t.tasks).whereNull('deleted_at').count({ n: '*' })) as { n: unknown }[];
      assert.equal(await total(), Number(live[0]!.n));

      const page = (await t.request('GET', '/api/tasks?page_size=2', { token: admin })).body.data;
      assert.deepEqual(
        page.map((x: { id: string }) => x.id),
        [made[2]!.id, made[0]!.id],
        'newest first, the deleted one left out',
      );
      assert.deepEqual(page[0], (await t.request('GET', `/api/tasks/${made[2]!.id}`, { token: admin })).body.data);
    });

    test('route guards: each task route needs its permission; /user-tasks needs only a login', async () => {
      const nobody = await t.userWith(['permission:list']);
      const id = '00000000-0000-4000-8000-000000000000';
      for (const [method, url] of [
        ['GET', '/api/tasks'],
        ['GET', `/api/tasks/${id}`],
        ['GET', `/api/tasks/${id}/logs`],
        ['POST', `/api/tasks/${id}/cancel`],
        ['POST', `/api/tasks/${id}/retry`],
        ['DELETE', `/api/tasks/${id}`],
        ['GET', '/api/task-schedules'],
        ['POST', '/api/task-schedules/session-cleanup/toggle'],
        ['POST', '/api/task-schedules/session-cleanup/trigger'],
        ['POST', '/api/authorization/users/export'],
        ['GET', '/api/system/task-settings/log-storage-backends'],
      ] as const) {
        const res = await t.request(method, url, { token: nobody.token });
        assert.equal(res.status, 403, `${method} ${url}`);
        assert.equal((await t.request(method, url)).status, 401, `${method} ${url} without a token`);
      }
      assert.equal((await t.request('GET', '/api/user-tasks', { token: nobody.token })).status, 200);
    });

    test('cancel, retry and delete over HTTP: answers, illegal states named, audit records', async () => {
      const running = (await t.c.engine.create({ type: 'api_wait', creatorId: null }))!;
      await waitStatus(running.id, 'running');
      const retryRunning = await t.request('POST', `/api/tasks/${running.id}/retry`, { token: admin });
      assert.equal(retryRunning.status, 400);
      assert.equal(retryRunning.body.code, 'E4001');
      assert.match(retryRunning.body.err, /running/);
      const delRunning = await t.request('DELETE', `/api/tasks/${running.id}`, { token: admin });
      assert.equal(delRunning.status, 400);
      assert.match(delRunning.body.err, /running/);

      const cancelled = await t.request('POST', `/api/tasks/${running.id}/cancel`, { token: admin });
      assert.equal(cancelled.status, 200);
      assert.equal(cancelled.body.data.status, 'cancelled');
      assert.match(
        (await t.request('POST', `/api/tasks/${running.id}/cancel`, { token: admin })).body.err,
        /cancelled/,
      );
      const [audit] = await audits('cancel', running.id);
      assert.equal(audit.resource_type, 'task');
      assert.deepEqual(audit.details.after, { status: 'cancelled' });

      const retried = await t.request('POST', `/api/tasks/${running.id}/retry`, { token: admin });
      assert.equal(retried.status, 200);
      assert.ok(['pending', 'running'].includes(retried.body.data.status));
      await waitStatus(running.id, 'running');
      await t.request('POST', `/api/tasks/${running.id}/cancel`, { token: admin });
      assert.equal((await audits('retry', running.id)).length, 1);

      const removed = await t.request('DELETE', `/api/tasks/${running.id}`, { token: admin });
      assert.equal(removed.status, 200);
      assert.equal(typeof removed.body.data.message, 'string');
      assert.equal((await t.request('GET', `/api/tasks/${running.id}`, { token: admin })).status, 404);
      assert.equal((await audits('delete', running.id)).length, 1);
    });

    test('logs are a paginated list, oldest first', async () => {
      const failed = (await t.c.engine.create({ type: 'api_fail', maxRetries: 1 }))!;
      const runsBefore = failedRuns;
      await waitStatus(failed.id, 'failed');
      assert.equal(failedRuns - runsBefore, 2, 'one run and one automatic retry');
      const page1 = await t.request('GET', `/api/tasks/${failed.id}/logs?page_size=1`, { token: admin });
      assert.equal(page1.status, 200);
      assert.equal(page1.body.total, 2);
      assert.equal(page1.body.page_size, 1);
      assert.equal(page1.body.data[0].level, 'warn', 'the retry first');
      const page2 = await t.request('GET', `/api/tasks/${failed.id}/logs?page_size=1&current=2`, { token: admin });
      assert.equal(page2.body.data[0].level, 'error');
      assert.equal(
        (await t.request('GET', `/api/tasks/${failed.id}/logs?page_size=101`, { token: admin })).status,
        400,
      );
    });

    test('schedules: list, toggle (flip or set), trigger, disabled and unknown schedules', async () => {
      const list = await t.request('GET', '/api/task-schedules', { token: admin });
      assert.equal(list.status, 200);
      assert.deepEqual(list.body.data.map((s: { id: string }) => s.id).sort(), [
        'audit-log-cleanup',
        'audit-log-verify',
        'session-cleanup',
        'task-log-cleanup',
      ]);
      const session = list.body.data.find((s: { id: string }) => s.id === 'session-cleanup');
      assert.deepEqual(Object.keys(session).sort(), [
        'enabled',
        'id',
        'last_run',
        'name',
        'next_run',
        'spec',
        'task_type',
        'timezone',
      ]);
      assert.equal(session.enabled, true);
      assert.ok(Date.parse(session.next_run) > Date.now());

      const operator = await t.userWith(['task:schedule:list', 'task:schedule:update', 'task:view']);
      const flipped = await t.request('POST', '/api/task-schedules/session-cleanup/toggle', { token: operator.token });
      assert.equal(flipped.status, 200);
      assert.equal(flipped.body.data.enabled, false);
      assert.equal(flipped.body.data.next_run, null);
      const refused = await t.request('POST', '/api/task-schedules/session-cleanup/trigger', { token: operator.token });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.code, 'E4001');
      const on = await t.request('POST', '/api/task-schedules/session-cleanup/toggle', {
        token: operator.token,
        body: { enabled: true },
      });
      assert.equal(on.body.data.enabled, true);
      const again = await t.request('POST', '/api/task-schedules/session-cleanup/toggle', {
        token: operator.token,
        body: { enabled: true },
      });
      assert.equal(again.body.data.enabled, true, 'an explicit value sets, not flips');
      assert.equal((await audits('toggle', 'session-cleanup')).length, 3);

      const fired = await t.request('POST', '/api/task-schedules/session-cleanup/trigger', { token: operator.token });
      assert.equal(fired.status, 200);
      assert.equal(fired.body.data.type, 'session_cleanup');
      assert.equal(fired.body.data.category, 'system');
      assert.equal(fired.body.data.creator_id, operator.id);
      assert.equal(fired.body.data.cron_schedule_id, 'session-cleanup');
      const done = await waitStatus(fired.body.data.id, 'success', operator.token);
      assert.deepEqual(Object.keys(JSON.parse(done.result)).sort(), ['deleted_sessions', 'deleted_tokens']);
      assert.equal((await audits('trigger', 'session-cleanup')).length, 1);
      const after = (await t.request('GET', '/api/task-schedules', { token: admin })).body.data.find(
        (s: { id: string }) => s.id === 'session-cleanup',
      );
      assert.ok(after.last_run);

      assert.equal((await t.request('POST', '/api/task-schedules/nope/trigger', { token: admin })).status, 404);
      assert.equal((await t.request('POST', '/api/task-schedules/nope/toggle', { token: admin })).body.code, 'E4041');
    });

    test('task log cleanup drops logs, finished tasks and artifacts past the retention; newer ones stay', async () => {
      t.c.engine.register('api_artifact', async (ctx) => {
        ctx.log.info('made a file');
        await ctx.artifact('a.txt', 'hello', 'text/plain');
      });
      const old = (await t.c.engine.create({ type: 'api_artifact' }))!;
      const fresh = (await t.c.engine.create({ type: 'api_artifact' }))!;
      const oldDone = await waitStatus(old.id, 'success');
      await waitStatus(fresh.id, 'success');
      const { knex, t: tables, dialect } = t.c.db;
      const longAgo = dialect.toDbTime(new Date(Date.now() - 40 * 86_400_000));
      await knex(tables.tasks).where('id', old.id).update({ finished_at: longAgo, created_at: longAgo });
      // Logs are append-only (on ClickHouse their time is part of the sort key): backdated by writing them again.
      const logs = (await knex(tables.taskLogs).where('task_id', old.id)) as Record<string, unknown>[];
      await knex(tables.taskLogs).where('task_id', old.id).del();
      await knex(tables.taskLogs).insert(logs.map((l) => ({ ...l, created_at: longAgo })));
      const oldFile = (await findFile(t.c.db, oldDone.artifact_file_key))!;
      const oldPath = join(t.c.config.server.file_upload_path, oldFile.path);
      assert.ok(existsSync(oldPath));

      const run = await t.request('POST', '/api/task-schedules/task-log-cleanup/trigger', { token: admin });
      const done = await waitStatus(run.body.data.id, 'success');
      const result = JSON.parse(done.result);
      assert.equal(result.retention_days, 30);
      assert.equal(result.deleted_tasks, 1);
      assert.equal(result.deleted_files, 1);
      assert.equal((await t.request('GET', `/api/tasks/${old.id}`, { token: admin })).status, 404);
      assert.equal(await findFile(t.c.db, oldDone.artifact_file_key), undefined);
      assert.equal(existsSync(oldPath), false, 'the bytes are gone too');
      assert.equal(
        (await t.request('GET', `/api/tasks/${fresh.id}/logs`, { token: admin })).body.total,
        1,
        'newer logs stay',
      );
    });

    test('engine settings: validated backend and pool size, applied live; the backend list', async () => {
      const backends = await t.request('GET', '/api/system/task-settings/log-storage-backends', { token: admin });
      assert.deepEqual(backends.body.data, [
        { id: 'database', name: 'Database' },
        { id: 'file', name: 'File' },
      ]);
      const map = (await t.request('GET', '/api/system/settings', { token: admin })).body.data;
      assert.equal(map.task_max_concurrent, '10');
      assert.equal(map.task_log_storage_backend, 'database');
      assert.equal(map.task_log_retention_days, '30');
      for (const bad of [
        { task_log_storage_backend: 'nope' },
        { task_max_concurrent: '0' },
        { task_max_concurrent: 'abc' },
      ]) {
        const res = await t.request('PUT', '/api/system/settings', { token: admin, body: bad });
        assert.equal(res.status, 400, JSON.stringify(bad));
        assert.equal(res.body.code, 'E4001');
      }
      const ok = await t.request('PUT', '/api/system/settings', { token: admin, body: { task_max_concurrent: '3' } });
      assert.equal(ok.status, 200);
      assert.equal(t.c.engine.concurrency, 3, 'the pool follows at once');
      await t.request('PUT', '/api/system/settings', { token: admin, body: { task_max_concurrent: '10' } });
    });

    test('metrics: the task series and HTTP series are exported', async () => {
      const text = (await t.request('GET', '/metrics')).text;
      for (const name of [
        'task_created_total',
        'task_started_total',
        'task_completed_total',
        'task_queue_overflow_total',
        'task_queue_length',
        'task_running',
        'task_run_duration_seconds_bucket',
        'http_requests_total',
        'process_cpu_seconds_total',
      ]) {
        // A sample line, not only the HELP/TYPE lines a metric without samples also has.
        assert.match(text, new RegExp(`^${name}(\\{[^}]*\\})? \\d`, 'm'), name);
      }
      assert.match(text, /task_completed_total\{type="user_export",category="user",status="success"\} [1-9]/);
    });
  });
}
