import type { KeyObject } from 'node:crypto';
import { checkpointSigned, type Checkpoint } from './audit-checkpoint.ts';
import { GENESIS_HASH, hashHolds, type ChainedRecord } from './audit-hash.ts';

/**
 * What is wrong at the first broken seq: a record's fields changed (`edited`), a record missing (`removed`), a
 * record that does not belong (`inserted`), records out of their order (`reordered`), or a checkpoint whose
 * signature does not check (`checkpoint`).
 */
export type BreakKind = 'edited' | 'removed' | 'inserted' | 'reordered' | 'checkpoint';

export interface Verification {
  intact: boolean;
  /** The first seq still kept (after what the retention cleanup removed). */
  first_seq: number;
  /** The last seq up to which the chain is intact. */
  verified_seq: number;
  /** The newest checkpoint the intact part matches (its number and size), if any. */
  checkpoint: number | null;
  checkpoint_seq: number | null;
  /** The first break, or null when the chain is intact. */
  broken: { seq: number; kind: BreakKind; reason: string } | null;
}

/** How many following records are read to tell a reordering or an insertion from an edit. */
const LOOK_AHEAD = 1000;

/** The newest removal the checkpoints record: verification starts after it, chained to its hash. */
function removalAnchor(checkpoints: readonly Checkpoint[]) {
  let anchor = { through: 0, hash: GENESIS_HASH };
  for (const c of checkpoints)
    if (c.removed_through > anchor.through) anchor = { through: c.removed_through, hash: c.removed_hash };
  return anchor;
}

/**
 * Walks the records in seq order (and by id within a seq) and answers where the chain holds up to, or its first
 * break and its kind. Checkpoints must all be signed by `publicKey`; each one's size must be reached with its hash.
 * Reads one record ahead, and up to LOOK_AHEAD at a break, so memory stays bounded however long the log.
 */
export async function verifyChain(
  records: AsyncIterable<ChainedRecord> | Iterable<ChainedRecord>,
  checkpoints: readonly Checkpoint[],
  publicKey: KeyObject,
): Promise<Verification> {
  const anchor = removalAnchor(checkpoints);
  let seq = anchor.through + 1;
  let prev = anchor.hash;
  let matched: Checkpoint | undefined;
  const result = (broken: Verification['broken'] = null): Verification => ({
    intact: !broken,
    first_seq: anchor.through + 1,
    verified_seq: seq - 1,
    checkpoint: matched?.number ?? null,
    checkpoint_seq: matched?.size ?? null,
    broken,
  });
  const bad = checkpoints.find((c) => !checkpointSigned(c, publicKey));
  if (bad)
    return result({ seq: bad.size, kind: 'checkpoint', reason: `checkpoint ${bad.number} is not signed by this key` });
  const bySize = new Map<number, Checkpoint[]>();
  for (const c of checkpoints) if (c.size > anchor.through) bySize.set(c.size, [...(bySize.get(c.size) ?? []), c]);

  const it = (Symbol.asyncIterator in records ? records[Symbol.asyncIterator]() : records[Symbol.iterator]()) as
    AsyncIterator<ChainedRecord> | Iterator<ChainedRecord>;
  let next = await it.next();
  while (!next.done) {
    const r = next.value;
    next = await it.next();
    // Left by a retention cleanup that stopped half-way: already covered by its checkpoint. A seq below 1 was never
    // handed out, so such a record was written outside the chain.
    if (r.seq >= 1 && r.seq <= anchor.through) continue;
    const after = next.done ? undefined : next.value;
    if (r.seq < seq || after?.seq === r.seq)
      return result({ seq: r.seq, kind: 'inserted', reason: 'two records carry this seq' });
    if (r.seq > seq) return result({ seq, kind: 'removed', reason: `the next record kept is seq ${r.seq}` });
    const consistent = hashHolds(r);
    if (r.prev_hash !== prev) {
      const later: ChainedRecord[] = after ? [after] : [];
      while (later.length < LOOK_AHEAD && !next.done) {
        next = await it.next();
        if (!next.done) later.push(next.value);
      }
      if (later.some((l) => l.hash === r.prev_hash))
        return result({ seq, kind: 'reordered', reason: 'it follows a record that comes later' });
      if (after?.prev_hash === prev)
        return result({ seq, kind: 'inserted', reason: 'the chain goes on from the record before it' });
      if (!consistent) return result({ seq, kind: 'edited', reason: 'its fields do not give its hash' });
      if (seq === anchor.through + 1)
        return result({ seq, kind: 'removed', reason: 'it does not follow the last record removed by retention' });
      // The record before was rewritten with a hash of its own making: this one still follows its old hash.
      seq -= 1;
      return result({ seq, kind: 'edited', reason: 'its hash was rewritten: the next record follows another' });
    }
    if (!consistent) return result({ seq, kind: 'edited', reason: 'its fields do not give its hash' });
    for (const c of bySize.get(seq) ?? []) {
      if (c.hash !== r.hash)
        return result({ seq, kind: 'edited', reason: `its hash is not the one checkpoint ${c.number} signed` });
      if (!matched || c.number > matched.number) matched = c;
    }
    prev = r.hash;
    seq += 1;
  }
  const covered = checkpoints.reduce<Checkpoint | undefined>((a, c) => (!a || c.size > a.size ? c : a), undefined);
  if (covered && covered.size >= seq)
    return result({
      seq,
      kind: 'removed',
      reason: `checkpoint ${covered.number} signed ${covered.size} records; the log ends at ${seq - 1}`,
    });
  return result();
}
