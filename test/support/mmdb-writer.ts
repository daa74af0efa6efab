// Minimal MaxMind DB (MMDB v2) writer for test fixtures.
// Spec: https://maxmind.github.io/MaxMind-DB/
//
// File layout:
//   [binary search tree][16 zero bytes][data section]["\xAB\xCD\xEFMaxMind.com"][metadata map]
//
// Search tree: node_count nodes, each made of two records (left = bit 0, right = bit 1).
// With record_size 32 a node is 8 bytes: two big-endian uint32. A record value is
//   < node_count          -> number of the next node
//   == node_count         -> "no data" for this address
//   > node_count          -> data: offset in data section = value - node_count - 16
// The lookup walks one bit of the address per node, starting at node 0.
// In an IPv6 tree (ip_version 6) IPv4 addresses live at ::/96, i.e. behind 96 zero bits.
import { writeFileSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';

export interface MmdbEntry {
  cidr: string;
  data: Record<string, unknown>;
}

export interface MmdbOptions {
  databaseType?: string;
  ipVersion?: 4 | 6;
}

const RECORD_SIZE = 32;
const METADATA_MARKER = Buffer.from([0xab, 0xcd, 0xef, ...Buffer.from('MaxMind.com')]);

// ---- data section encoding ------------------------------------------------
// Each field starts with a control byte: 3 bits type, 5 bits size. Types > 7 are
// "extended": type bits are 0 and the next byte holds (type - 7). Sizes >= 29 spill
// into 1-3 following bytes. Map size = number of pairs, array size = element count.
const T = { string: 2, double: 3, uint16: 5, uint32: 6, map: 7, int32: 8, uint64: 9, array: 11, boolean: 14 } as const;

/** Forces a specific MMDB integer type for a value (used for metadata). */
class Typed {
  constructor(
    readonly type: number,
    readonly value: number | bigint,
  ) {}
}
const u16 = (v: number) => new Typed(T.uint16, v);
const u32 = (v: number) => new Typed(T.uint32, v);
const u64 = (v: bigint) => new Typed(T.uint64, v);

function ctrl(type: number, size: number): Buffer {
  const head = type > 7 ? [0, type - 7] : [type << 5];
  let sizeBits: number;
  let extra: number[] = [];
  if (size < 29) sizeBits = size;
  else if (size < 285) [sizeBits, extra] = [29, [size - 29]];
  else if (size < 65_821) [sizeBits, extra] = [30, [(size - 285) >> 8, (size - 285) & 0xff]];
  else {
    const s = size - 65_821;
    [sizeBits, extra] = [31, [(s >> 16) & 0xff, (s >> 8) & 0xff, s & 0xff]];
  }
  head[0]! |= sizeBits;
  return Buffer.from([...head, ...extra]);
}

/** Big-endian unsigned integer using the fewest bytes (0 is encoded with 0 bytes). */
function uintBytes(v: bigint): Buffer {
  const bytes: number[] = [];
  for (; v > 0n; v >>= 8n) bytes.unshift(Number(v & 0xffn));
  return Buffer.from(bytes);
}

function encode(value: unknown): Buffer {
  if (value instanceof Typed) {
    const payload = value.type === T.int32 ? int32Bytes(Number(value.value)) : uintBytes(BigInt(value.value));
    return Buffer.concat([ctrl(value.type, payload.length), payload]);
  }
  if (typeof value === 'string') {
    const s = Buffer.from(value, 'utf8');
    return Buffer.concat([ctrl(T.string, s.length), s]);
  }
  if (typeof value === 'boolean') return ctrl(T.boolean, value ? 1 : 0); // size carries the value
  if (typeof value === 'bigint') return encode(u64(value));
  if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= 0 && value <= 0xffff) return encode(u16(value));
    if (Number.isInteger(value) && value >= 0 && value <= 0xffff_ffff) return encode(u32(value));
    if (Number.isInteger(value) && value < 0 && value >= -0x8000_0000) return encode(new Typed(T.int32, value));
    const d = Buffer.alloc(8);
    d.writeDoubleBE(value);
    return Buffer.concat([ctrl(T.double, 8), d]);
  }
  if (Array.isArray(value)) return Buffer.concat([ctrl(T.array, value.length), ...value.map(encode)]);
  if (value !== null && typeof value === 'object') {
    const pairs = Object.entries(value).filter(([, v]) => v !== undefined);
    return Buffer.concat([ctrl(T.map, pairs.length), ...pairs.flatMap(([k, v]) => [encode(k), encode(v)])]);
  }
  throw new Error(`mmdb-writer: cannot encode ${String(value)}`);
}

function int32Bytes(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(v);
  return b;
}

// ---- addresses --------------------------------------------------------------
function ipBytes(ip: string): number[] {
  if (isIPv4(ip)) return ip.split('.').map(Number);
  if (!isIPv6(ip)) throw new Error(`mmdb-writer: invalid IP ${ip}`);
  let s = ip;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s); // embedded IPv4 tail, e.g. ::ffff:1.2.3.4
  if (v4) {
    const [a, b, c, d] = v4[1]!.split('.').map(Number) as [number, number, number, number];
    s = s.slice(0, v4.index) + (((a << 8) | b).toString(16) + ':' + ((c << 8) | d).toString(16));
  }
  const [left, right] = s.split('::') as [string, string | undefined];
  const l = left ? left.split(':') : [];
  const r = right ? right.split(':') : [];
  const groups = [...l, ...Array<string>(8 - l.length - r.length).fill('0'), ...r];
  return groups.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]);
}

/** CIDR -> the bit path from the root of the tree (length = prefix length). */
function cidrBits(cidr: string, ipVersion: 4 | 6): number[] {
  const [ip = '', len] = cidr.split('/');
  let bytes = ipBytes(ip);
  let prefix = len === undefined ? bytes.length * 8 : Number(len);
  if (bytes.length === 4 && ipVersion === 6) [bytes, prefix] = [[...Array<number>(12).fill(0), ...bytes], prefix + 96];
  if (bytes.length === 16 && ipVersion === 4) throw new Error(`mmdb-writer: IPv6 ${cidr} in an IPv4 tree`);
  if (!Number.isInteger(prefix) || prefix < 1 || prefix > bytes.length * 8)
    throw new Error(`mmdb-writer: bad prefix in ${cidr}`);
  return Array.from({ length: prefix }, (_, i) => (bytes[i >> 3]! >> (7 - (i & 7))) & 1);
}

// ---- tree -------------------------------------------------------------------
interface TreeNode {
  kids: [Slot, Slot];
}
type Slot = TreeNode | { data: number } | null; // node | data-section offset | empty

export function writeMmdb(path: string, entries: MmdbEntry[], opts: MmdbOptions = {}): void {
  const ipVersion = opts.ipVersion ?? 6;
  // Data section: each distinct record encoded once; the tree points at its offset.
  const chunks: Buffer[] = [];
  const offsets = new Map<string, number>();
  let dataSize = 0;
  const dataOffset = (data: Record<string, unknown>): number => {
    const key = JSON.stringify(data, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));
    let off = offsets.get(key);
    if (off === undefined) {
      const buf = encode(data);
      offsets.set(key, (off = dataSize));
      chunks.push(buf);
      dataSize += buf.length;
    }
    return off;
  };

  // Insert shorter prefixes first so more specific networks split and override them.
  const root: TreeNode = { kids: [null, null] };
  const sorted = entries
    .map((e) => ({ bits: cidrBits(e.cidr, ipVersion), data: e.data }))
    .sort((a, b) => a.bits.length - b.bits.length);
  for (const { bits, data } of sorted) {
    let node = root;
    for (let i = 0; i < bits.length - 1; i++) {
      const bit = bits[i]!;
      const rec = node.kids[bit]!;
      // An existing data leaf above a more specific network is pushed down to both halves.
      if (rec === null || !('kids' in rec)) node.kids[bit] = { kids: [rec, rec] };
      node = node.kids[bit] as TreeNode;
    }
    node.kids[bits[bits.length - 1]!] = { data: dataOffset(data) };
  }

  // Number nodes breadth-first (root = 0), then serialise both records of each node.
  const nodes: TreeNode[] = [root];
  for (let i = 0; i < nodes.length; i++) for (const k of nodes[i]!.kids) if (k && 'kids' in k) nodes.push(k);
  const index = new Map(nodes.map((n, i) => [n, i]));
  const nodeCount = nodes.length;
  const tree = Buffer.alloc((nodeCount * RECORD_SIZE * 2) / 8);
  nodes.forEach((n, i) =>
    n.kids.forEach((k, side) => {
      const value = k === null ? nodeCount : 'kids' in k ? index.get(k)! : nodeCount + 16 + k.data;
      tree.writeUInt32BE(value, i * 8 + side * 4);
    }),
  );

  const metadata = encode({
    node_count: u32(nodeCount),
    record_size: u16(RECORD_SIZE),
    ip_version: u16(ipVersion),
    database_type: opts.databaseType ?? 'GeoLite2-City',
    languages: ['en'],
    binary_format_major_version: u16(2),
    binary_format_minor_version: u16(0),
    build_epoch: u64(BigInt(Math.floor(Date.now() / 1000))),
    description: { en: 'Console test fixture' },
  });
  writeFileSync(path, Buffer.concat([tree, Buffer.alloc(16), ...chunks, METADATA_MARKER, metadata]));
}
