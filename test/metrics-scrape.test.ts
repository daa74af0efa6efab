import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { until } from './support/engine-node.ts';
import { lanes, startConsole } from './support/harness.ts';

const binary = spawnSync('prometheus', ['--version']).error ? undefined : 'prometheus';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function query(base: string, promql: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  const res = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = (await res.json()) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
  return body.status === 'success' ? body.data.result : [];
}

if (!binary) console.log('# skipping the Prometheus scrape test: no prometheus binary (apt-get install prometheus; tools/ci/services.sh installs it)');

test('a real Prometheus scrapes /metrics and answers a task metric through its query API', { skip: !binary && 'no prometheus binary' }, async () => {
  const t = await startConsole(lanes()[0]!, { server: { host: '127.0.0.1', port: 0 } });
  const dir = mkdtempSync(join(tmpdir(), 'console-prom-'));
  let prometheus: ChildProcess | undefined;
  try {
    const { port } = await t.c.listen();
    t.c.engine.register('scraped', async () => 'ok');
    const task = await t.c.engine.create({ type: 'scraped', creatorId: null });
    assert.ok(await until(async () => (await t.c.engine.get(task!.id))?.status === 'success', 5000));

    writeFileSync(
      join(dir, 'prometheus.yml'),
      `global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs: [{job_name: console, static_configs: [{targets: ['127.0.0.1:${port}']}]}]\n`,
    );
    const promPort = await freePort();
    // Always on loopback: the default listen address is every interface.
    prometheus = spawn(binary!, [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${promPort}`], { stdio: 'ignore' });
    const base = `http://127.0.0.1:${promPort}`;
    // The first scrape comes a few seconds after start.
    let result: Awaited<ReturnType<typeof query>> = [];
    const found = await until(async () => {
      result = await query(base, 'task_completed_total{type="scraped"}').catch(() => []);
      return result.length > 0;
    }, 30_000, 250);
    assert.ok(found, 'Prometheus answered the task metric');
    assert.equal(result[0]!.metric.status, 'success');
    assert.equal(result[0]!.metric.job, 'console');
    assert.equal(result[0]!.value[1], '1');
  } finally {
    prometheus?.kill();
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every metric the Grafana dashboard queries is one /metrics serves', async () => {
  const dashboard = JSON.parse(readFileSync(new URL('../docs/grafana-dashboard.json', import.meta.url), 'utf8')) as { panels: { targets?: { expr: string }[] }[] };
  const exprs = dashboard.panels.flatMap((p) => p.targets ?? []).map((t) => t.expr);
  const used = new Set(exprs.flatMap((e) => [...e.matchAll(/\b((?:http|task)_[a-z_]+)\{/g)].map((m) => m[1]!)));
  assert.ok(used.size >= 6, `the dashboard queries the task and HTTP metrics: ${[...used].join(', ')}`);
  const t = await startConsole(lanes()[0]!);
  try {
    const served = (await t.request('GET', '/metrics')).text;
    const missing = [...used].filter((name) => !new RegExp(`^# TYPE ${name.replace(/_(bucket|count|sum)$/, '')} `, 'm').test(served));
    assert.deepEqual(missing, []);
  } finally {
    await t.close();
  }
});
