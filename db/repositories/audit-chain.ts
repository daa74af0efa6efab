import type { Knex } from 'knex';
import { canonicalJson, GENESIS_HASH, recordHash, type ChainedRecord } from '../../lib/audit-hash.ts';
import type { Database } from '../database.ts';
import { isoFromDb, type Dialect } from '../dialects/index.ts';
import type { TableNames } from '../tables.ts';
import { filtered, filterValues, recordFromRow, type AuditFilter, type AuditRecord } from './audit-logs.ts';

/** The one chain-head row's key. */
const HEAD = 'audit';
/** Appends in this process wait here, so only one of them at a time waits on the head row's lock. */
export const CHAIN_LOCK = 'audit_chain';

export interface ChainHead {
  seq: number;
  hash: string;
}

/**
 * The chain's head, locked until the transaction ends where the engine has row locks (PostgreSQL, MySQL):
 * every node's append takes this lock first, so no two records get one seq and the chain never forks. SQLite's
 * single writer and ClickHouse's single process (`CHAIN_LOCK`) serialise appends without it.
 */
export async function lockedHead(trx: Knex, t: TableNames, dialect: Dialect): Promise<ChainHead> {
  const row = (await dialect.lockForUpdate(trx(t.auditChain).where('name', HEAD).select('seq', 'hash')))[0] as
    { seq: unknown; hash: string } | undefined;
  return row ? { seq: Number(row.seq), hash: row.hash } : { seq: 0, hash: GENESIS_HASH };
}

export async function writeHead(trx: Knex, t: TableNames, dialect: Dialect, head: ChainHead): Promise<void> {
  await dialect.replaceRows(trx, t.auditChain, [{ name: HEAD, seq: head.seq, hash: head.hash }], ['name']);
}

/**
 * Runs `work` holding the chain head: one at a time in this process, and in a transaction that locks the head
 * row on engines with row locks. Appends, checkpoints and the retention cleanup all go through here.
 */
export function withChainHead<T>(db: Database, work: (trx: Knex, head: ChainHead) => Promise<T>): Promise<T> {
  return db.withLock(CHAIN_LOCK, () =>
    db.dialect.transaction(db.knex, async (trx) => work(trx, await lockedHead(trx, db.t, db.dialect))),
  );
}

/** Appends the records, in order, in one transaction holding the head; answers each one's seq and hash. */
async function appendBatch(db: Database, records: AuditRecord[]): Promise<ChainHead[]> {
  // Stored as canonical text (what verification hashes without parsing it) of the value JSON gives back:
  // undefined members gone, numbers as JSON has them.
  const contents = records.map((r) => ({ ...r, details: JSON.parse(JSON.stringify(r.details)) as unknown }));
  return withChainHead(db, async (trx, head) => {
    const heads: ChainHead[] = [];
    const rows = contents.map((content) => {
      const prev = heads.at(-1) ?? head;
      const next = { seq: prev.seq + 1, hash: recordHash(prev.hash, { ...content, seq: prev.seq + 1 }) };
      heads.push(next);
      return {
        ...content,
        created_at: db.dialect.toDbTime(new Date(content.created_at)),
        details: canonicalJson(content.details),
        seq: next.seq,
        prev_hash: prev.hash,
        hash: next.hash,
      };
    });
    await trx(db.t.auditLogs).insert(rows);
    await writeHead(trx, db.t, db.dialect, heads.at(-1)!);
    return heads;
  });
}

interface Pending {
  record: AuditRecord;
  done(head: ChainHead): void;
  failed(error: unknown): void;
}

/** Records waiting for the append under way in this process, per database. */
const waiting = new WeakMap<Database, Pending[]>();
/** At most this many records go in one transaction. */
const MAX_BATCH = 200;

/**
 * Appends the record to the chain: the next seq, the head's hash as its previous hash, and its own hash.
 * Records written while an append holds the head wait and then go together in the next transaction (a group
 * commit): under load the head's lock is taken once for many records rather than once for each.
 */
export function appendAuditRecord(db: Database, record: AuditRecord): Promise<ChainHead> {
  return new Promise((done, failed) => {
    const queue = waiting.get(db);
    if (queue) return void queue.push({ record, done, failed });
    const started: Pending[] = [{ record, done, failed }];
    waiting.set(db, started);
    void drain(db, started);
  });
}

async function drain(db: Database, queue: Pending[]): Promise<void> {
  try {
    while (queue.length) await appendEach(db, queue.splice(0, MAX_BATCH));
  } finally {
    waiting.delete(db);
  }
}

/** One transaction for the batch; when it fails, each record alone, so one bad record fails only itself. */
async function appendEach(db: Database, batch: Pending[]): Promise<void> {
  try {
    const heads = await appendBatch(
      db,
      batch.map((p) => p.record),
    );
    batch.forEach((p, i) => p.done(heads[i]!));
  } catch (error) {
    if (batch.length === 1) return batch[0]!.failed(error);
    for (const p of batch) await appendEach(db, [p]);
  }
}

/** The chain's head as committed, without locking it. */
export async function chainHead(db: Database): Promise<ChainHead> {
  return lockedHead(db.knex, db.t, { ...db.dialect, lockForUpdate: (q) => q });
}

const BATCH = 5000;

/**
 * The records matching `filter` in seq order (by id within a seq, where tampering gave two records one seq),
 * read in keyset batches of BATCH: a million records pass through without being held at once. With
 * `detailsText`, details stay the stored text (`details_json`), for verification, which need not parse them.
 */
export async function* chainedRecords(
  db: Database,
  filter: AuditFilter = {},
  throughSeq = Number.MAX_SAFE_INTEGER,
  { detailsText = false } = {},
): AsyncGenerator<ChainedRecord & AuditRecord> {
  const values = filterValues(db, filter);
  let after: { seq: number; id: string } | undefined;
  for (;;) {
    const q = filtered(db, values).where('seq', '<=', throughSeq);
    if (after) {
      const { seq, id } = after;
      // `seq >= ?` bounds the index scan; the OR alone is a filter the planner applies from the first entry on.
      q.where('seq', '>=', seq).where((w) => w.where('seq', '>', seq).orWhere('id', '>', id));
    }
    const rows = await db.read(q.orderBy([{ column: 'seq' }, { column: 'id' }]).limit(BATCH));
    for (const row of rows) {
      row.seq = Number(row.seq);
      if (detailsText) {
        row.created_at = isoFromDb(row.created_at);
        row.details_json = String(row.details);
        row.details = undefined;
        yield row as unknown as ChainedRecord & AuditRecord;
      } else yield recordFromRow<ChainedRecord & AuditRecord>(row);
    }
    if (rows.length < BATCH) return;
    const last = rows[rows.length - 1]!;
    after = { seq: last.seq as number, id: String(last.id) };
  }
}

/**
 * Chains the records written before the chain existed (migration 013), in the order they were listed in
 * (created_at, then id), and sets the head to the last of them.
 */
export async function chainExistingRecords(knex: Knex, t: TableNames, dialect: Dialect): Promise<void> {
  let head: ChainHead = { seq: 0, hash: GENESIS_HASH };
  let after: { created_at: unknown; id: string } | undefined;
  for (;;) {
    // Every record, in the list's order, whatever seq a run stopped half-way gave it: a run again starts over.
    const q = knex(t.auditLogs);
    if (after) {
      const { created_at, id } = after;
      q.where('created_at', '>=', created_at as string).where((w) =>
        w.where('created_at', '>', created_at as string).orWhere('id', '>', id),
      );
    }
    const rows = (await q.orderBy([{ column: 'created_at' }, { column: 'id' }]).limit(1000)) as Record<
      string,
      unknown
    >[];
    if (!rows.length) break;
    const records = rows.map((row) => recordFromRow(row));
    const last = records[records.length - 1]!;
    after = { created_at: dialect.toDbTime(new Date(last.created_at)), id: last.id };
    await dialect.transaction(knex, async (trx) => {
      for (const r of records) {
        const seq = head.seq + 1;
        const hash = recordHash(head.hash, { ...r, seq });
        await trx(t.auditLogs)
          .where('id', r.id)
          .update({ seq, prev_hash: head.hash, hash, details: canonicalJson(r.details) });
        head = { seq, hash };
      }
    });
  }
  await writeHead(knex, t, dialect, head);
}
