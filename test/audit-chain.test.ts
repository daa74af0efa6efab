import assert from 'node:assert/strict';
import { createPublicKey, randomUUID, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Database } from '../db/database.ts';
import { appendAuditRecord, chainHead } from '../db/repositories/audit-chain.ts';
import type { Checkpoint } from '../lib/audit-checkpoint.ts';
import type { ChainedRecord } from '../lib/audit-hash.ts';
import { verifyChain } from '../lib/audit-verify.ts';
import { captureLogs, lanes, startConsole, type TestConsole } from './support/harness.ts';

/** The bytes docs/audit-chain.md says a checkpoint's signature covers, written out here from the document. */
const documentedNote = (c: Checkpoint) =>
  Buffer.from(
    `console audit checkpoint v1\nnumber ${c.number}\nsize ${c.size}\nhash ${c.hash}\ntime ${c.time}\nremoved ${c.removed_through} ${c.removed_hash}\n`,
  );

for (const lane of lanes()) {
  describe(`audit hash chain [${lane.name}]`, () => {
    let t: TestConsole;
    let admin: string;
    let folder: string;
    const logs = captureLogs('error');
    const checkpointFile = () => join(folder, 'checkpoints.jsonl');

    const write = async (n: number, tag = 'x') => {
      for (let i = 0; i < n; i++)
        await t.c.services.audit.write({
          action: 'update',
          resource_type: 'user',
          resource_id: `${tag}${i}`,
          details: { i, tag, nested: { b: 1, a: [1, 'two', null] } },
        });
    };
    const verifyApi = async () => {
      const res = await t.request('GET', '/api/audit-logs/verify', { token: admin });
      assert.equal(res.status, 200, res.text);
      return res.body.data as {
        intact: boolean;
        verified_seq: number;
        first_seq: number;
        checkpoint: number | null;
        broken?: { seq: number; kind: string };
      };
    };
    /** The audit table, for tampering as someone with database access would. */
    const rows = () => t.c.db.knex(t.c.db.t.auditLogs);
    const rowAt = async (seq: number) => (await rows().where('seq', seq).first()) as Record<string, any>;
    /** Applies the tampering, checks what verification says, then undoes it. */
    const tampered = async (what: () => Promise<() => Promise<void>>, expected: { seq: number; kind: string }) => {
      const undo = await what();
      try {
        const v = await verifyApi();
        assert.equal(v.intact, false, JSON.stringify(v));
        assert.deepEqual({ seq: v.broken!.seq, kind: v.broken!.kind }, expected, JSON.stringify(v));
      } finally {
        await undo();
      }
      assert.equal((await verifyApi()).intact, true, 'intact again once undone');
    };

    before(async () => {
      folder = mkdtempSync(join(tmpdir(), 'audit-chain-'));
      t = await startConsole(lane, { audit: { checkpoint_path: checkpointFile() } }, { logger: logs.logger });
      admin = await t.login();
      await write(20);
    });
    after(async () => {
      await t.close();
      rmSync(folder, { recursive: true, force: true });
    });

    test('records are numbered 1..n, each chained to the one before, and verify intact', async () => {
      const head = await chainHead(t.c.db);
      const seqs = ((await rows().orderBy('seq').select('seq')) as { seq: unknown }[]).map((r) => Number(r.seq));
      assert.deepEqual(
        seqs,
        Array.from({ length: head.seq }, (_, i) => i + 1),
      );
      const v = await verifyApi();
      assert.equal(v.intact, true, JSON.stringify(v));
      assert.equal(v.verified_seq, head.seq);
    });

    test('a checkpoint is signed over the documented bytes, listed, and appended to the file (no secret: 0644)', async () => {
      const c = await t.c.services.auditChain.checkpoint();
      assert.ok(c);
      const list = await t.request('GET', '/api/audit-logs/checkpoints?page_size=5', { token: admin });
      assert.equal(list.status, 200, list.text);
      const listed = list.body.data[0] as Checkpoint;
      assert.deepEqual(listed, c);
      const key = await t.request('GET', '/api/audit-logs/public-key', { token: admin });
      assert.equal(key.status, 200, key.text);
      const publicKey = createPublicKey(key.body.data.public_key);
      assert.ok(verify(null, documentedNote(listed), publicKey, Buffer.from(listed.signature, 'base64')));
      assert.ok(
        !verify(
          null,
          documentedNote({ ...listed, size: listed.size + 1 }),
          publicKey,
          Buffer.from(listed.signature, 'base64'),
        ),
      );
      const lines = readFileSync(checkpointFile(), 'utf8').trim().split('\n');
      assert.deepEqual(JSON.parse(lines.at(-1)!), c);
      assert.equal(statSync(checkpointFile()).mode & 0o777 & ~0o644, 0);
      assert.equal(await t.c.services.auditChain.checkpoint(), undefined, 'nothing new: no checkpoint');
      const v = await verifyApi();
      assert.equal(v.checkpoint, c.number);
    });

    test('an edited field is found at its seq', async () => {
      const original = await rowAt(5);
      await tampered(
        async () => {
          await rows().where('seq', 5).update({ username: 'mallory' });
          return async () => void (await rows().where('seq', 5).update({ username: original.username }));
        },
        { seq: 5, kind: 'edited' },
      );
    });

    test('details are checked as JSON: spacing and member order do not matter, a value does', async () => {
      const original = await rowAt(6);
      const value = JSON.parse(original.details) as Record<string, unknown>;
      const reordered = JSON.stringify(Object.fromEntries(Object.entries(value).reverse()), null, 1);
      assert.notEqual(reordered, original.details);
      await rows().where('seq', 6).update({ details: reordered });
      try {
        assert.equal((await verifyApi()).intact, true);
      } finally {
        await rows().where('seq', 6).update({ details: original.details });
      }
      await tampered(
        async () => {
          await rows()
            .where('seq', 6)
            .update({ details: JSON.stringify({ ...value, i: 99 }) });
          return async () => void (await rows().where('seq', 6).update({ details: original.details }));
        },
        { seq: 6, kind: 'edited' },
      );
    });

    test('a deleted record is found at its seq', async () => {
      const original = await rowAt(7);
      await tampered(
        async () => {
          await rows().where('seq', 7).del();
          return async () => void (await rows().insert(original));
        },
        { seq: 7, kind: 'removed' },
      );
    });

    test('a forged record is found as inserted', async () => {
      const forged = { ...(await rowAt(9)), id: '00000000-0000-4000-8000-000000000009', username: 'forger' };
      await tampered(
        async () => {
          await rows().insert(forged);
          return async () => void (await rows().where('id', forged.id).del());
        },
        { seq: 9, kind: 'inserted' },
      );
    });

    test('a record written outside the chain (seq 0, as an insert that skips it leaves it) is found as inserted', async () => {
      const forged = { ...(await rowAt(9)), id: '00000000-0000-4000-8000-000000000010', seq: 0, username: 'forger' };
      await tampered(
        async () => {
          await rows().insert(forged);
          return async () => void (await rows().where('id', forged.id).del());
        },
        { seq: 0, kind: 'inserted' },
      );
    });

    test('two records swapped are found as reordered', async () => {
      const a = await rowAt(11);
      const b = await rowAt(12);
      await tampered(
        async () => {
          await rows().where('id', a.id).update({ seq: b.seq });
          await rows().where('id', b.id).update({ seq: a.seq });
          return async () => {
            await rows().where('id', a.id).update({ seq: a.seq });
            await rows().where('id', b.id).update({ seq: b.seq });
          };
        },
        { seq: 11, kind: 'reordered' },
      );
    });

    test('the tail cut after a checkpoint is found as removed', async () => {
      await write(3, 'tail');
      const c = (await t.c.services.auditChain.checkpoint())!;
      const gone = (await rows().where('seq', '>', c.size - 2)) as Record<string, unknown>[];
      await tampered(
        async () => {
          await rows()
            .where('seq', '>', c.size - 2)
            .del();
          return async () => void (await rows().insert(gone));
        },
        { seq: c.size - 1, kind: 'removed' },
      );
    });

    test('retention removes a prefix with a signed checkpoint: the rest verifies, a removal in the middle does not', async () => {
      await new Promise((r) => setTimeout(r, 20));
      const cut = new Date();
      await new Promise((r) => setTimeout(r, 20));
      await write(5, 'kept');
      const headBefore = (await chainHead(t.c.db)).seq;
      const removed = await t.c.services.auditChain.removeBefore(cut);
      assert.equal(removed, headBefore - 5);
      const v = await verifyApi();
      assert.equal(v.intact, true, JSON.stringify(v));
      assert.equal(v.first_seq, headBefore - 4);
      const [last] = (await t.request('GET', '/api/audit-logs/checkpoints?page_size=1', { token: admin })).body
        .data as Checkpoint[];
      assert.equal(last!.removed_through, headBefore - 5);
      const middle = await rowAt(headBefore - 2);
      await tampered(
        async () => {
          await rows()
            .where('seq', headBefore - 2)
            .del();
          return async () => void (await rows().insert(middle));
        },
        { seq: headBefore - 2, kind: 'removed' },
      );
    });

    test('the daily verification schedule fails on a broken chain, logs, audits it and sets the metric', async () => {
      const metric = async (name: string) =>
        Number(new RegExp(`^${name} (\\S+)$`, 'm').exec((await t.request('GET', '/metrics')).text)?.[1]);
      const head = (await chainHead(t.c.db)).seq;
      const original = await rowAt(head - 1);
      await rows()
        .where('seq', head - 1)
        .update({ action: 'login' });
      try {
        const fired = await t.request('POST', '/api/task-schedules/audit-log-verify/trigger', { token: admin });
        assert.equal(fired.status, 200, fired.text);
        const id = fired.body.data.id as string;
        let task: { status: string; error?: string } | undefined;
        for (let i = 0; i < 200 && !['failed', 'success'].includes(task?.status ?? ''); i++) {
          await new Promise((r) => setTimeout(r, 50));
          task = (await t.request('GET', `/api/tasks/${id}`, { token: admin })).body.data;
        }
        assert.equal(task?.status, 'failed', JSON.stringify(task));
        assert.ok(logs.lines.some((l) => l.msg === 'the audit chain is broken'));
        assert.equal(await metric('audit_chain_intact'), 0);
        assert.equal(await metric('audit_chain_verified_seq'), head - 2);
      } finally {
        await rows()
          .where('seq', head - 1)
          .update({ action: original.action });
      }
      const failures = (
        await t.request('GET', '/api/audit-logs?action=verify&resource_type=audit_log', { token: admin })
      ).body.data as { status: string; resource_id: string }[];
      assert.deepEqual(
        failures.map((f) => [f.status, f.resource_id]),
        [['failure', String(head - 1)]],
      );
      assert.equal((await verifyApi()).intact, true);
      assert.equal(await metric('audit_chain_intact'), 1);
    });

    test('the export streams JSON lines and CSV with the chain fields; the lines verify outside; the export is audited', async () => {
      const res = await t.request('GET', '/api/audit-logs/export?format=jsonl', { token: admin });
      assert.equal(res.status, 200, res.text);
      assert.match(String(res.headers['content-type']), /ndjson/);
      const records = res.text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as ChainedRecord);
      assert.ok(
        records.some((r) => r.action === 'export' && r.resource_type === 'audit_log'),
        'the export is audited',
      );
      const checkpoints = readFileSync(checkpointFile(), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Checkpoint);
      const key = (await t.request('GET', '/api/audit-logs/public-key', { token: admin })).body.data.public_key;
      const outside = await verifyChain(records, checkpoints, createPublicKey(key));
      assert.equal(outside.intact, true, JSON.stringify(outside));
      assert.equal(outside.verified_seq, records.at(-1)!.seq);
      const csv = await t.request('GET', '/api/audit-logs/export?format=csv&action=update', { token: admin });
      assert.equal(csv.status, 200);
      const rows = csv.text.trim().split('\r\n');
      assert.equal(
        rows[0],
        'seq,id,created_at,user_id,username,action,resource_type,resource_id,status,ip,user_agent,org_id,details,prev_hash,hash',
      );
      assert.equal(rows.length - 1, records.filter((r) => r.action === 'update').length);
      const bad = await t.request('GET', '/api/audit-logs/export?format=xml', { token: admin });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.code, 'E4001');
    });

    test('the OpenAPI document lists the new routes, the export with its format and filters', async () => {
      const doc = (await t.request('GET', '/api/openapi.json')).body;
      for (const path of [
        '/audit-logs/verify',
        '/audit-logs/checkpoints',
        '/audit-logs/public-key',
        '/audit-logs/export',
      ])
        assert.ok(doc.paths[path]?.get, `${path} is documented`);
      const names = (doc.paths['/audit-logs/export'].get.parameters as { name?: string }[]).map((p) => p.name);
      for (const name of ['format', 'user_id', 'action', 'resource_type', 'start_time', 'end_time'])
        assert.ok(names.includes(name), `export documents ${name}`);
    });

    test('verification and the export need their permissions', async () => {
      const viewer = await t.userWith(['user:list']);
      assert.equal((await t.request('GET', '/api/audit-logs/verify', { token: viewer.token })).status, 403);
      assert.equal((await t.request('GET', '/api/audit-logs/export', { token: viewer.token })).status, 403);
    });
  });
}

const record = (username: string, j: number) => ({
  id: randomUUID(),
  created_at: new Date().toISOString(),
  user_id: null,
  username,
  action: 'update',
  resource_type: 'user',
  resource_id: String(j),
  status: 'success' as const,
  ip: '',
  user_agent: '',
  org_id: null,
  details: { j },
});

// Several nodes appending at once: PostgreSQL and MariaDB (SQLite and ClickHouse run one writer by design).
for (const lane of lanes().filter((l) => l.name === 'postgres' || l.name === 'mysql')) {
  describe(`audit hash chain, three nodes [${lane.name}]`, () => {
    const nodes: TestConsole[] = [];
    before(async () => {
      nodes.push(await startConsole(lane));
      for (let i = 0; i < 2; i++)
        nodes.push(await startConsole(lane, { database: nodes[0]!.database }, {}, { keepTables: true }));
    });
    after(async () => {
      for (const n of nodes.slice(1)) await n.close();
      await nodes[0]?.close();
    });

    test('concurrent appends from three nodes leave one unbroken chain', async () => {
      const before = (await chainHead(nodes[0]!.c.db)).seq;
      // Consoles of one process share its lock on the chain: without it, as on separate machines, only the
      // database's lock on the head row keeps the appends apart.
      const asMachines = nodes.map((n): Database => ({ ...n.c.db, withLock: (_keys, fn) => fn() }));
      await Promise.all(
        asMachines.flatMap((db, i) =>
          Array.from({ length: 60 }, (_, j) => appendAuditRecord(db, record(`node${i}`, j))),
        ),
      );
      const head = await chainHead(nodes[1]!.c.db);
      assert.equal(head.seq, before + 180);
      const v = await nodes[2]!.c.services.auditChain.verify();
      assert.equal(v.intact, true, JSON.stringify(v));
      assert.equal(v.verified_seq, head.seq);
      // Whichever node is first signs what was added; the others find nothing new.
      const cps = await Promise.all(nodes.map((n) => n.c.services.auditChain.checkpoint()));
      assert.equal(cps.filter(Boolean).length, 1);
    });

    test('appends waiting together go in one transaction; a record the database refuses fails alone', async () => {
      const db = nodes[0]!.c.db;
      let inserts = 0;
      const count = (q: { sql?: string }) => void (/^insert into "?`?\w*audit_logs/.test(q.sql ?? '') && inserts++);
      db.knex.on('query', count);
      await Promise.all(Array.from({ length: 30 }, (_, j) => appendAuditRecord(db, record('batch', j))));
      db.knex.off('query', count);
      assert.ok(inserts <= 3, `${inserts} inserts for 30 records`);
      const before = (await chainHead(db)).seq;
      const results = await Promise.allSettled(
        Array.from({ length: 30 }, (_, j) => appendAuditRecord(db, record(j === 7 ? 'x'.repeat(200) : 'batch', j))),
      );
      assert.deepEqual(
        results.map((r, j) => (r.status === 'rejected' ? j : -1)).filter((j) => j >= 0),
        [7],
      );
      assert.equal((await chainHead(db)).seq, before + 29);
      const v = await nodes[1]!.c.services.auditChain.verify();
      assert.equal(v.intact, true, JSON.stringify(v));
    });
  });
}
