import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Registry } from 'prom-client';
import { until } from './support/engine-node.ts';
import { lanes, startConsole } from './support/harness.ts';

const binary = spawnSync('prometheus', ['--version']).error ? undefined : 'prometheus';
const promtool = spawnSync('promtool', ['--version']).error ? undefined : 'promtool';

// prom-client's default Node gauges carry `_total`; docs/decisions.md says why they stay. Nothing else may be found.
const DEFAULT_METRIC_FINDINGS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function query(
  base: string,
  promql: string,
): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  const res = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = (await res.json()) as {
    status: string;
    data: { result: { metric: Record<string, string>; value: [number, string] }[] };
  };
  return body.status === 'success' ? body.data.result : [];
}

if (!binary)
  console.log(
    '# skipping the Prometheus scrape test: no prometheus binary (apt-get install prometheus; tools/ci/services.sh installs it)',
  );

// CI installs it (tools/ci/services.sh), so there a missing promtool fails the test instead of skipping it.
const skipLint = !promtool && !process.env.CI && 'no promtool binary';
if (skipLint)
  console.log(
    '# skipping the promtool lint test: no promtool binary (apt-get install prometheus; tools/ci/services.sh installs it)',
  );

for (const lane of lanes()) {
  test(
    `${lane.name}: promtool check metrics finds nothing in /metrics after a task has run but prom-client's default Node gauges`,
    { skip: skipLint },
    async () => {
      assert.ok(promtool, 'promtool is on PATH (tools/ci/services.sh installs the prometheus package)');
      const t = await startConsole(lane);
      try {
        t.c.engine.register('linted', async () => 'ok');
        const task = await t.c.engine.create({ type: 'linted', creatorId: null });
        assert.ok(await until(async () => (await t.c.engine.get(task!.id))?.status === 'success', 10_000));
        await t.request('GET', '/api/auth/me');
        const served = (await t.request('GET', '/metrics')).text;
        assert.match(served, /^task_completed_total\{.*type="linted"/m);
        const check = spawnSync(promtool!, ['check', 'metrics'], { input: served, encoding: 'utf8' });
        const findings = `${check.stdout}${check.stderr}`.split('\n').filter(Boolean);
        const ours = findings.filter((line) => !DEFAULT_METRIC_FINDINGS.some((name) => line.startsWith(`${name} `)));
        assert.deepEqual(ours, []);
      } finally {
        await t.close();
      }
    },
  );
}

test(
  'a real Prometheus scrapes /metrics and answers a task metric through its query API',
  { skip: !binary && 'no prometheus binary' },
  async () => {
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
      prometheus = spawn(
        binary!,
        [
          `--config.file=${join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${promPort}`,
        ],
        { stdio: 'ignore' },
      );
      const base = `http://127.0.0.1:${promPort}`;
      // The first scrape comes a few seconds after start.
      let result: Awaited<ReturnType<typeof query>> = [];
      const found = await until(
        async () => {
          result = await query(base, 'task_completed_total{type="scraped"}').catch(() => []);
          return result.length > 0;
        },
        30_000,
        250,
      );
      assert.ok(found, 'Prometheus answered the task metric');
      assert.equal(result[0]!.metric.status, 'success');
      assert.equal(result[0]!.metric.job, 'console');
      assert.equal(result[0]!.value[1], '1');
    } finally {
      prometheus?.kill();
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

/** Each series a PromQL expression selects (`name{...}`), with the labels it matches on or groups by (`job` aside). */
function seriesAndLabels(expr: string): { series: string[]; labels: string[] } {
  const series = [...expr.matchAll(/\b([a-z_]+)\{/g)].map((m) => m[1]!);
  const matchers = [...expr.matchAll(/\{([^}]*)\}/g)].flatMap((m) =>
    [...m[1]!.matchAll(/([a-z_]+)\s*[=!]~?/g)].map((l) => l[1]!),
  );
  const grouped = [...expr.matchAll(/\bby \(([^)]*)\)/g)].flatMap((m) => m[1]!.split(',').map((l) => l.trim()));
  return { series, labels: [...new Set([...matchers, ...grouped])].filter((l) => l !== 'job') };
}

// prom-client keeps the label names it was given on the metric; its typings expose them only on the configuration.
const labelNames = (metric: object) => [...((metric as { labelNames?: string[] }).labelNames ?? [])];

/** The label names a series of the registry carries (a histogram's `_bucket` adds `le`), or undefined when not served. */
function servedLabels(registry: Registry, series: string): string[] | undefined {
  const metric = registry.getSingleMetric(series);
  if (metric) return labelNames(metric);
  const [, base, suffix] = /^(.*)_(bucket|count|sum)$/.exec(series) ?? [];
  const histogram = base ? registry.getSingleMetric(base) : undefined;
  if (!histogram) return undefined;
  return suffix === 'bucket' ? [...labelNames(histogram), 'le'] : labelNames(histogram);
}

const OWN_METRIC = (name: string) => !/^(process|nodejs)_/.test(name);

test('every metric and label the Grafana dashboard queries is one /metrics serves', async () => {
  const dashboard = JSON.parse(readFileSync(new URL('../docs/grafana-dashboard.json', import.meta.url), 'utf8')) as {
    panels: { targets?: { expr: string }[] }[];
  };
  const exprs = dashboard.panels.flatMap((p) => p.targets ?? []).map((t) => seriesAndLabels(t.expr));
  assert.ok(new Set(exprs.flatMap((e) => e.series)).size >= 6, 'the dashboard queries the task and HTTP metrics');
  const t = await startConsole(lanes()[0]!);
  try {
    const wrong = exprs.flatMap(({ series, labels }) =>
      series.flatMap((name) => {
        const known = servedLabels(t.c.metrics.registry, name);
        if (!known) return [`${name}: not served`];
        return labels.filter((l) => !known.includes(l)).map((l) => `${name}: no label ${l}`);
      }),
    );
    assert.deepEqual(wrong, []);
  } finally {
    await t.close();
  }
});

test('README and docs/engine.md name every metric of ours with the labels it has', async () => {
  const docs = ['../README.md', '../docs/engine.md']
    .map((f) => readFileSync(new URL(f, import.meta.url), 'utf8'))
    .join('\n');
  const t = await startConsole(lanes()[0]!);
  try {
    const registry = t.c.metrics.registry;
    const own = registry
      .getMetricsAsArray()
      .map((m) => m.name)
      .filter(OWN_METRIC);
    assert.ok(own.includes('task_running') && own.includes('http_request_duration_seconds'));
    assert.deepEqual(
      own.filter((name) => !docs.includes(`\`${name}`)),
      [],
      'metrics the docs do not name',
    );
    const wrong = [...docs.matchAll(/`([a-z_]+)\{([a-z_,]+)\}`/g)].flatMap(([, name, labels]) => {
      const known = servedLabels(registry, name!);
      if (!known) return [`${name}: not served`];
      return [...labels!.split(',')].sort().join() === [...known].sort().join()
        ? []
        : [`${name}{${labels}}: served with {${known.join()}}`];
    });
    assert.deepEqual(wrong, []);
  } finally {
    await t.close();
  }
});
