import { hash } from 'node:crypto';

/** The previous hash of the first record (seq 1): 32 zero bytes, in hex. */
export const GENESIS_HASH = '0'.repeat(64);

/** What an audit record's hash covers, in the order it is encoded (docs/audit-chain.md). */
export interface ChainedContent {
  seq: number;
  id: string;
  created_at: string;
  user_id: string | null;
  username: string;
  action: string;
  resource_type: string;
  resource_id: string;
  status: string;
  ip: string;
  user_agent: string;
  org_id: string | null;
  details: unknown;
}

/** A record as the chain stores it: its content, the hash it follows and its own hash. */
export interface ChainedRecord extends ChainedContent {
  prev_hash: string;
  hash: string;
  /**
   * `details` as the database holds it, where the reader kept the text: verification then hashes the text itself
   * when it is canonical (as the service writes it), without parsing and re-encoding it.
   */
  details_json?: string;
}

/**
 * JSON in the canonical form of RFC 8785 (JCS) for the values JSON.parse makes: object members sorted by their
 * names' UTF-16 code units, no white space, strings and numbers as JSON.stringify writes them. Members whose
 * value is undefined are left out, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++)
      out += `${i ? ',' : ''}${value[i] === undefined ? 'null' : canonicalJson(value[i])}`;
    return `${out}]`;
  }
  const object = value as Record<string, unknown>;
  let out = '{';
  for (const k of Object.keys(object).sort()) {
    if (object[k] === undefined) continue;
    out += `${out.length > 1 ? ',' : ''}${JSON.stringify(k)}:${canonicalJson(object[k])}`;
  }
  return `${out}}`;
}

const text = (s: string) => JSON.stringify(s);
const uuid = (id: string | null) => (id === null ? 'null' : text(id.toLowerCase()));

/**
 * The record's canonical bytes: the JCS text of the array of its fields in the documented order, written out
 * directly (what canonicalJson would make of that array), with `detailsJson` the canonical text of `details`.
 */
function encodingWith(r: ChainedContent, detailsJson: string): string {
  return `[${r.seq},${uuid(r.id)},${text(r.created_at)},${uuid(r.user_id)},${text(r.username)},${text(r.action)},${text(r.resource_type)},${text(r.resource_id)},${text(r.status)},${text(r.ip)},${text(r.user_agent)},${uuid(r.org_id)},${detailsJson}]`;
}

export function recordEncoding(r: ChainedContent): string {
  return encodingWith(r, canonicalJson(r.details));
}

const sha256 = (prevHash: string, encoding: string) =>
  hash('sha256', Buffer.concat([Buffer.from(prevHash, 'hex'), Buffer.from(encoding, 'utf8')]), 'hex');

/** SHA-256 over the previous record's hash (32 bytes) followed by this record's canonical bytes (UTF-8), in hex. */
export function recordHash(prevHash: string, r: ChainedContent): string {
  return sha256(prevHash, recordEncoding(r));
}

/**
 * Whether the record's fields and `prev_hash` give its `hash`. Details kept as text are hashed as they are first
 * (the service writes them canonical), and only when that fails parsed and re-encoded, so the answer is the same.
 */
export function hashHolds(r: ChainedRecord): boolean {
  if (r.details_json === undefined) return recordHash(r.prev_hash, r) === r.hash;
  if (sha256(r.prev_hash, encodingWith(r, r.details_json)) === r.hash) return true;
  try {
    return recordHash(r.prev_hash, { ...r, details: JSON.parse(r.details_json) }) === r.hash;
  } catch {
    // Text that is no JSON at all was not written by the service.
    return false;
  }
}
