import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { queryOperation, registerDatabaseMetrics } from '../db/metrics.ts';
import { VERSION } from '../server/version.ts';
import { until } from './support/engine-node.ts';
import { lanes, openTestDatabase, startConsole } from './support/harness.ts';

const PROMTOOL = '/usr/bin/promtool';
// prom-client's default Node gauges carry `_total` (docs/decisions.md says why they stay).
const DEFAULT_METRIC_FINDINGS = /^nodejs_active_(handles|requests|resources)_total /;

/** The value of one series in Prometheus text, by its exact name and labels. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('a statement is labelled by its first word, anything else is "other"', () => {
  assert.equal(queryOperation('select * from t'), 'select');
  assert.equal(queryOperation('  SELECT 1'), 'select');
  assert.equal(queryOperation('insert into t values (?)'), 'insert');
  assert.equal(queryOperation('update t set a = ?'), 'update');
  assert.equal(queryOperation('delete from t where id = ?'), 'delete');
  assert.equal(queryOperation('create table t (a int)'), 'other');
  assert.equal(queryOperation('with x as (select 1) select * from x'), 'other');
  assert.equal(queryOperation('selection'), 'other');
});

test('the Grafana dashboard charts queue wait, pending tasks by type, query time and the versions running', () => {
  const dashboard = readFileSync(new URL('../docs/grafana-dashboard.json', import.meta.url), 'utf8');
  for (const series of [
    'task_queue_wait_seconds_bucket',
    'task_pending',
    'db_query_duration_seconds_bucket',
    'console_build_info',
  ])
    assert.match(dashboard, new RegExp(`${series}\\{`), series);
});

for (const lane of lanes()) {
  describe(`operator metrics [${lane.name}]`, () => {
    test('db_query_duration_seconds counts every statement by operation, exactly', async () => {
      const db = openTestDatabase(lane.database());
      const registry = new Registry();
      registerDatabaseMetrics(registry, db);
      try {
        for (let i = 0; i < 3; i++) await db.knex.raw('select 1');
        const text = await registry.metrics();
        assert.equal(sample(text, 'db_query_duration_seconds_count{operation="select"}'), 3);
        assert.ok(sample(text, 'db_query_duration_seconds_sum{operation="select"}')! > 0);
        assert.equal(sample(text, 'db_query_duration_seconds_count{operation="insert"}') ?? 0, 0);
      } finally {
        await db.close();
      }
    });

    test('queue wait, pending tasks by type and build info after a task ran; promtool finds nothing', async () => {
      const t = await startConsole(lane);
      try {
        t.c.engine.register('ops_ran', async () => 'ok');
        t.c.engine.register('ops_idle', async () => 'ok');
        const ran = (await t.c.engine.create({ type: 'ops_ran', creatorId: null }))!;
        assert.ok(await until(async () => (await t.c.engine.get(ran.id))?.status === 'success', 10_000));
        for (let i = 0; i < 3; i++) await t.c.engine.create({ type: 'ops_nobody_runs', creatorId: null });
        const task = (await t.c.engine.get(ran.id))!;
        const text = (await t.request('GET', '/metrics')).text;

        const wait = (Date.parse(task.started_at!) - Date.parse(task.created_at)) / 1000;
        assert.equal(sample(text, 'task_queue_wait_seconds_count{type="ops_ran"}'), 1);
        assert.equal(sample(text, 'task_queue_wait_seconds_sum{type="ops_ran"}'), wait, 'created_at to started_at');
        assert.equal(sample(text, 'task_pending{type="ops_nobody_runs"}'), 3);
        assert.equal(sample(text, 'task_pending{type="ops_idle"}'), 0, 'a type this node runs shows 0');
        assert.equal(sample(text, 'task_pending{type="ops_ran"}'), 0);
        assert.equal(sample(text, 'task_queue_length'), 3);
        assert.equal(sample(text, `console_build_info{version="${VERSION}",node_version="${process.version}"}`), 1);
        assert.ok(sample(text, 'db_query_duration_seconds_count{operation="select"}')! > 0);
        assert.ok(sample(text, 'db_query_duration_seconds_count{operation="insert"}')! > 0);

        if (!existsSync(PROMTOOL)) return void console.log(`# promtool lint skipped: no ${PROMTOOL}`);
        const check = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
        const findings = `${check.stdout}${check.stderr}`.split('\n').filter(Boolean);
        assert.deepEqual(
          findings.filter((l) => !DEFAULT_METRIC_FINDINGS.test(l)),
          [],
        );
      } finally {
        await t.close();
      }
    });
  });
}
