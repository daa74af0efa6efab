import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { migrations } from '../db/migrations/index.ts';
import { openTestDatabase } from './support/harness.ts';
import { SOURCE_CLI } from './support/source-cli.ts';

// The runner's own DATABASE_*/SERVER_* variables must not steer the child.
const ENV = { PATH: process.env.PATH, LOG_PATH: '' };

function cli(cwd: string, args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [...SOURCE_CLI, ...args], {
    cwd,
    env: { ...ENV, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('the CLI says what it did', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'console-cli-output-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('migrate names each migration it applied, then says none was due', () => {
    const first = cli(dir, ['migrate']);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, new RegExp(`^Applied ${migrations.length} migrations:`, 'm'));
    for (const m of migrations) assert.match(first.stdout, new RegExp(`^  ${m.name}$`, 'm'));
    assert.doesNotMatch(first.stdout, /up to date/);
    const again = cli(dir, ['migrate']);
    assert.equal(again.status, 0, again.stderr);
    assert.equal(again.stdout.trim(), `No migrations were due (${migrations.length} applied before).`);
  });

  test('backup of a large database reports its progress on stderr, in order, up to 100%', async () => {
    const db = openTestDatabase({ driver: 'sqlite', path: join(dir, 'console.db'), table_prefix: 't_' });
    try {
      await db.knex.raw('create table ballast (b blob)');
      // About 12 MB: 3,000 pages and more.
      await db.knex.raw(
        'insert into ballast with recursive n(i) as (select 1 union all select i + 1 from n where i < 3000) select randomblob(4000) from n',
      );
    } finally {
      await db.close();
    }
    const run = cli(dir, ['backup', 'copy.db']);
    assert.equal(run.status, 0, run.stderr);
    const lines = run.stderr.trim().split('\n');
    const percents = lines.map((l) => {
      const m = /^backup: (\d+)% \((\d+) of (\d+) pages\)$/.exec(l);
      assert.ok(m, `a progress line: ${l}`);
      return Number(m[1]);
    });
    assert.ok(percents.length >= 5, `several progress lines: ${run.stderr}`);
    assert.deepEqual(
      percents,
      [...percents].sort((a, b) => a - b),
      'ascending',
    );
    assert.equal(percents.at(-1), 100);
    assert.match(run.stdout, /Database copied to copy\.db\./);
  });

  test('config check prints the effective configuration with secrets masked', () => {
    const file = join(dir, 'check.yaml');
    writeFileSync(file, 'server:\n  port: 9191\njwt:\n  secret: file-secret-0123456789\n');
    const run = cli(dir, ['config', 'check', '--config', file, '--log.level', 'warn'], {
      DATABASE_PASSWORD: 'env-password-secret',
      METRICS_TOKEN: 'metrics-token-secret',
    });
    assert.equal(run.status, 0, run.stderr);
    for (const secret of ['file-secret-0123456789', 'env-password-secret', 'metrics-token-secret'])
      assert.ok(!run.stdout.includes(secret), `${secret} is masked`);
    const shown = parseYaml(run.stdout) as Record<string, Record<string, unknown>>;
    assert.equal(shown.server!.port, 9191, 'from the file');
    assert.equal(shown.log!.level, 'warn', 'from a flag');
    assert.equal(shown.jwt!.secret, '***');
    assert.equal(shown.database!.password, '***');
    assert.equal(shown.metrics!.token, '***');
    assert.equal(shown.server!.host, '0.0.0.0', 'defaults are shown too');
    assert.match(run.stderr, new RegExp(`configuration is valid \\(file ${file.replace(/[/.]/g, '\\$&')},`));
  });

  test('config check of an invalid configuration exits 1 naming the field', () => {
    const run = cli(dir, ['config', 'check'], { SERVER_PORT: 'eighty' });
    assert.equal(run.status, 1);
    assert.match(run.stderr.trim(), /^config: server\.port: must be a whole number[^\n]*$/);
    assert.equal(run.stdout, '');
  });

  test('every command answers --help with its own usage and exits 0', () => {
    for (const command of [['serve'], ['migrate'], ['backup'], ['admin', 'reset-password'], ['config', 'check']]) {
      const run = cli(dir, [...command, '--help']);
      assert.equal(run.status, 0, run.stderr);
      assert.match(run.stdout, new RegExp(`^Usage: console ${command.join(' ')}`), run.stdout);
      assert.match(run.stdout, /Exit codes:/);
    }
    const all = cli(dir, ['--help']);
    assert.equal(all.status, 0);
    assert.match(all.stdout, /config check/);
  });

  test('the exit codes the CLI documents are those in docs/cli.md', () => {
    const doc = readFileSync(new URL('../docs/cli.md', import.meta.url), 'utf8');
    const help = cli(dir, ['--help']).stdout;
    for (const [, code, meaning] of help.matchAll(/^ {2}(\d+) +(.+)$/gm))
      assert.match(doc, new RegExp(`\\| ${code} \\| ${meaning!.split(' ')[0]}`), `exit code ${code} is in docs/cli.md`);
  });
});
