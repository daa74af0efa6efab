import type { Knex } from 'knex';
import type { Checkpoint, CheckpointBody } from '../../lib/audit-checkpoint.ts';
import { GENESIS_HASH } from '../../lib/audit-hash.ts';
import type { Database } from '../database.ts';
import { isoFromDb } from '../dialects/index.ts';
import { pageWindow } from '../page-window.ts';
import { withChainHead, type ChainHead } from './audit-chain.ts';

type Sign = (body: CheckpointBody) => Checkpoint;

function checkpointFromRow(row: Record<string, unknown>): Checkpoint {
  return {
    number: Number(row.number),
    size: Number(row.size),
    hash: String(row.hash),
    time: isoFromDb(row.created_at)!,
    removed_through: Number(row.removed_through),
    removed_hash: String(row.removed_hash),
    signature: String(row.signature),
  };
}

async function lastCheckpoint(db: Database, on: Knex): Promise<Checkpoint | undefined> {
  const row = (await on(db.t.auditCheckpoints).orderBy('number', 'desc').first()) as
    Record<string, unknown> | undefined;
  return row && checkpointFromRow(row);
}

async function insertCheckpoint(db: Database, trx: Knex, c: Checkpoint): Promise<void> {
  const { time, ...rest } = c;
  await trx(db.t.auditCheckpoints).insert({ ...rest, created_at: db.dialect.toDbTime(new Date(time)) });
}

/** The next checkpoint after `last` at `head`, removing through `removed` (the last one's removal when unchanged). */
function nextBody(
  last: Checkpoint | undefined,
  head: ChainHead,
  removed?: { through: number; hash: string },
): CheckpointBody {
  return {
    number: (last?.number ?? 0) + 1,
    size: head.seq,
    hash: head.hash,
    time: new Date().toISOString(),
    removed_through: removed?.through ?? last?.removed_through ?? 0,
    removed_hash: removed?.hash ?? last?.removed_hash ?? GENESIS_HASH,
  };
}

/**
 * Signs and stores a checkpoint of the chain's head when records were added since the last one; answers it, or
 * undefined when there was nothing new. Taken holding the chain head, so nodes never write the same one twice.
 */
export function writeCheckpoint(db: Database, sign: Sign): Promise<Checkpoint | undefined> {
  return withChainHead(db, async (trx, head) => {
    const last = await lastCheckpoint(db, trx);
    if (head.seq === (last?.size ?? 0)) return undefined;
    const c = sign(nextBody(last, head));
    await insertCheckpoint(db, trx, c);
    return c;
  });
}

/**
 * The retention cleanup: removes the oldest records, a prefix of the chain only (up to the record before the
 * first one made at or after `before`), after a signed checkpoint saying which seqs go and the hash the rest
 * follows. Answers how many records were removed and the checkpoint, if there was anything to remove.
 */
export function removeChainPrefix(
  db: Database,
  before: Date,
  sign: Sign,
): Promise<{ removed: number; checkpoint?: Checkpoint }> {
  const { t, dialect } = db;
  return withChainHead(db, async (trx, head) => {
    const kept = (await trx(t.auditLogs)
      .where('created_at', '>=', dialect.toDbTime(before) as string)
      .min({ seq: 'seq' })) as { seq: unknown }[];
    const through = kept[0]?.seq == null ? head.seq : Number(kept[0].seq) - 1;
    const last = await lastCheckpoint(db, trx);
    if (through <= (last?.removed_through ?? 0)) return { removed: 0 };
    const anchor = (await trx(t.auditLogs).where('seq', through).first('hash')) as { hash: string } | undefined;
    if (!anchor) throw new Error(`audit record ${through} is missing: verify the audit chain before removing records`);
    const checkpoint = sign(nextBody(last, head, { through, hash: anchor.hash }));
    await insertCheckpoint(db, trx, checkpoint);
    const removed = await trx(t.auditLogs).where('seq', '<=', through).del();
    return { removed, checkpoint };
  });
}

/** Every checkpoint, oldest first (verification reads them all: a few a minute at most). */
export async function allCheckpoints(db: Database): Promise<Checkpoint[]> {
  const rows = await db.read(db.knex(db.t.auditCheckpoints).orderBy('number'));
  return rows.map(checkpointFromRow);
}

/** A page of checkpoints, newest first. */
export async function listCheckpoints(
  db: Database,
  offset: number,
  limit: number,
): Promise<{ rows: Checkpoint[]; total: number }> {
  const [count] = (await db.read(db.knex(db.t.auditCheckpoints).count({ n: '*' }))) as { n: unknown }[];
  const rows = await db.read(pageWindow(db.knex(db.t.auditCheckpoints).orderBy('number', 'desc'), offset, limit));
  return { rows: rows.map(checkpointFromRow), total: Number(count?.n ?? 0) };
}
