import { createHash } from 'node:crypto';

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
}

/**
 * JSON in the canonical form of RFC 8785 (JCS) for the values JSON.parse makes: object members sorted by their
 * names' UTF-16 code units, no white space, strings and numbers as JSON.stringify writes them. Members whose
 * value is undefined are left out, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const members = Object.keys(value)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${members.join(',')}}`;
}

const lowerOrNull = (id: string | null) => (id === null ? null : id.toLowerCase());

/** The record's canonical bytes: a JSON array of its fields in the documented order. */
export function recordEncoding(r: ChainedContent): string {
  return canonicalJson([
    r.seq,
    r.id.toLowerCase(),
    r.created_at,
    lowerOrNull(r.user_id),
    r.username,
    r.action,
    r.resource_type,
    r.resource_id,
    r.status,
    r.ip,
    r.user_agent,
    lowerOrNull(r.org_id),
    r.details,
  ]);
}

/** SHA-256 over the previous record's hash (32 bytes) followed by this record's canonical bytes (UTF-8), in hex. */
export function recordHash(prevHash: string, r: ChainedContent): string {
  return createHash('sha256').update(Buffer.from(prevHash, 'hex')).update(recordEncoding(r), 'utf8').digest('hex');
}
