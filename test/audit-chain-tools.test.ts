import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { chainHead } from '../db/repositories/audit-chain.ts';
import type { Checkpoint } from '../lib/audit-checkpoint.ts';
import { GENESIS_HASH, recordHash, type ChainedRecord } from '../lib/audit-hash.ts';
import { installBefore } from './support/old-install.ts';
import { lanes, openTestDatabase, startConsole, testConfig } from './support/harness.ts';
import { SOURCE_CLI } from './support/source-cli.ts';

const record = (i: number, created_at: string) => ({
  id: randomUUID(),
  created_at,
  user_id: null,
  username: 'admin',
  action: 'update',
  resource_type: 'user',
  resource_id: String(i),
  status: 'success',
  ip: '127.0.0.1',
  user_agent: 'test',
  org_id: null,
  details: { i },
});

for (const lane of lanes()) {
  describe(`audit chain migration [${lane.name}]`, () => {
    test('records written before the chain are chained oldest first by the migration, and verify', async () => {
      const config = testConfig(lane);
      const times = ['2024-01-03T00:00:00.000Z', '2024-01-01T00:00:00.000Z', '2024-01-02T00:00:00.000Z'];
      await installBefore(config, '013_audit_chain', async (db) => {
        for (const [i, at] of times.entries())
          await db.knex(db.t.auditLogs).insert({
            ...record(i, at),
            created_at: db.dialect.toDbTime(new Date(at)),
            details: JSON.stringify({ i }),
          });
      });
      const t = await startConsole(lane, { database: config.database });
      try {
        const rows = (await t.c.db.knex(t.c.db.t.auditLogs).where('seq', '<=', 3).orderBy('seq')) as {
          resource_id: string;
        }[];
        assert.deepEqual(
          rows.map((r) => r.resource_id),
          ['1', '2', '0'],
        );
        const v = await t.c.services.auditChain.verify();
        assert.equal(v.intact, true, JSON.stringify(v));
        assert.ok(v.verified_seq >= 3);
      } finally {
        await t.close();
      }
    });
  });
}

describe('console audit verify (sqlite)', () => {
  test('answers intact with the checkpoint signed at shutdown; a change in the database exits 1 naming its seq', async () => {
    const lane = lanes()[0]!;
    const folder = mkdtempSync(join(tmpdir(), 'audit-cli-'));
    const checkpoints = join(folder, 'checkpoints.jsonl');
    const t = await startConsole(lane, { audit: { checkpoint_path: checkpoints } }, {}, { keepTables: true });
    const database = t.database;
    for (let i = 0; i < 5; i++)
      await t.c.services.audit.write({ action: 'update', resource_type: 'user', resource_id: String(i) });
    const head = await chainHead(t.c.db);
    await t.close();
    const signed = readFileSync(checkpoints, 'utf8').trim().split('\n');
    const last = JSON.parse(signed.at(-1)!) as Checkpoint;
    assert.equal(last.size, head.seq, 'the shutdown signed the last records');
    const flags = ['--database.driver', 'sqlite', '--database.path', database.path!, '--database.table_prefix', 't_'];
    const cli = (...args: string[]) =>
      spawnSync(process.execPath, [...SOURCE_CLI, 'audit', 'verify', ...flags, ...args], {
        cwd: dirname(database.path!),
        env: { PATH: process.env.PATH },
        encoding: 'utf8',
        timeout: 60_000,
      });
    const ok = cli('--checkpoints', checkpoints);
    assert.equal(ok.status, 0, ok.stderr);
    assert.equal(ok.stdout.trim(), `intact up to seq ${head.seq}, matching checkpoint ${last.number}`);
    const db = openTestDatabase(database);
    try {
      await db.knex(db.t.auditLogs).where('seq', 3).update({ resource_id: 'changed' });
    } finally {
      await db.close();
    }
    const broken = cli();
    assert.equal(broken.status, 1);
    assert.match(broken.stdout, /^broken at seq 3: edited/);
    const missing = cli('--checkpoints', join(folder, 'none.jsonl'));
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /none\.jsonl/);
    rmSync(folder, { recursive: true, force: true });
    rmSync(dirname(database.path!), { recursive: true, force: true });
  });
});

describe('audit export memory (sqlite)', () => {
  test('50,000 records stream out with bounded heap growth, and the output verifies', async () => {
    const t = await startConsole(lanes()[0]!);
    try {
      const { db } = t.c;
      // Written as the documented encoding says, in bulk: the export is what is measured, not the appends.
      let head = await chainHead(db);
      const padding = 'p'.repeat(900);
      for (let batch = 0; batch < 50; batch++) {
        const rows = [];
        for (let i = 0; i < 1000; i++) {
          const r = { ...record(i, new Date().toISOString()), details: { i, padding } };
          const seq = head.seq + 1;
          const hash = recordHash(head.hash, { ...r, seq });
          rows.push({ ...r, details: JSON.stringify(r.details), seq, prev_hash: head.hash, hash });
          head = { seq, hash };
        }
        await db.knex.batchInsert(db.t.auditLogs, rows, 100);
      }
      await db.knex(db.t.auditChain).update({ seq: head.seq, hash: head.hash });
      const { port } = await t.c.listen();
      const token = await t.login();
      // What stays reachable, not garbage not yet collected: measured after a full collection.
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;
      const retained = () => {
        gc();
        return process.memoryUsage().heapUsed;
      };
      const heap0 = retained();
      let chunks = 0;
      let peak = 0;
      let bytes = 0;
      let seq = 0;
      let prev = GENESIS_HASH;
      let rest = '';
      const res = await fetch(`http://127.0.0.1:${port}/api/audit-logs/export?format=jsonl`, {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(res.status, 200);
      const decoder = new TextDecoder();
      for await (const chunk of res.body!) {
        bytes += chunk.byteLength;
        const lines = (rest + decoder.decode(chunk, { stream: true })).split('\n');
        rest = lines.pop()!;
        for (const line of lines) {
          const r = JSON.parse(line) as ChainedRecord;
          assert.equal(r.seq, seq + 1);
          assert.equal(r.prev_hash, prev);
          assert.equal(recordHash(r.prev_hash, r), r.hash, `record ${r.seq}`);
          seq = r.seq;
          prev = r.hash;
        }
        if (++chunks % 100 === 0) peak = Math.max(peak, retained() - heap0);
      }
      assert.equal(seq, (await chainHead(db)).seq, 'every record, the login and the export audited after them too');
      assert.ok(bytes > 50_000_000, `${bytes} bytes exported`);
      assert.ok(
        peak < 40_000_000,
        `heap grew by ${Math.round(peak / 1e6)} MB while ${Math.round(bytes / 1e6)} MB streamed`,
      );
    } finally {
      await t.close();
    }
  });
});

describe('audit checkpoints on a timer (sqlite)', () => {
  test('each interval while records are added a checkpoint is signed, and none while nothing is', async () => {
    const t = await startConsole(lanes()[0]!, { audit: { checkpoint_interval: '150ms' } });
    try {
      const count = async () =>
        Number(((await t.c.db.knex(t.c.db.t.auditCheckpoints).count({ n: '*' })) as { n: unknown }[])[0]!.n);
      await t.c.services.audit.write({ action: 'update', resource_type: 'user', resource_id: 'timer' });
      const head = await chainHead(t.c.db);
      for (let i = 0; i < 40 && (await count()) === 0; i++) await new Promise((r) => setTimeout(r, 50));
      const [first] = (await t.c.services.auditChain.checkpoints({ current: 1, page_size: 1 })).data;
      assert.equal(first?.size, head.seq);
      const signed = await count();
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(await count(), signed, 'nothing added: nothing signed');
    } finally {
      await t.close();
    }
  });
});
