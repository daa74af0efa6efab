import type { Database } from '../../db/database.ts';
import { chainedRecords, chainHead } from '../../db/repositories/audit-chain.ts';
import type { AuditFilter } from '../../db/repositories/audit-logs.ts';
import type { ChainedRecord } from '../../lib/audit-hash.ts';
import type { ExportAuditInput } from './schemas.ts';

/** The exported fields, in this order (the CSV header): the record, then its chain fields. */
export const EXPORT_FIELDS = [
  'seq',
  'id',
  'created_at',
  'user_id',
  'username',
  'action',
  'resource_type',
  'resource_id',
  'status',
  'ip',
  'user_agent',
  'org_id',
  'details',
  'prev_hash',
  'hash',
] as const satisfies readonly (keyof ChainedRecord)[];

export const EXPORT_CONTENT_TYPES = { jsonl: 'application/x-ndjson', csv: 'text/csv; charset=utf-8' } as const;

/** RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled. Null is an empty field. */
function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

const lineOf: Record<ExportAuditInput['format'], (r: ChainedRecord) => string> = {
  jsonl: (r) => `${JSON.stringify(Object.fromEntries(EXPORT_FIELDS.map((f) => [f, r[f]])))}\n`,
  csv: (r) => `${EXPORT_FIELDS.map((f) => csvField(r[f])).join(',')}\r\n`,
};

/** Text is handed on in pieces of about this size: one write per record would cost more than the record. */
const CHUNK = 64 * 1024;

/**
 * The matching records in seq order, up to the head when the export began, as JSON lines or CSV. Records are
 * read in keyset batches and text handed on as the reader takes it, so memory stays bounded by a batch.
 */
export async function* exportAuditText(
  db: Database,
  filter: AuditFilter,
  format: ExportAuditInput['format'],
): AsyncGenerator<string> {
  const through = (await chainHead(db)).seq;
  const line = lineOf[format];
  let text = format === 'csv' ? `${EXPORT_FIELDS.join(',')}\r\n` : '';
  for await (const r of chainedRecords(db, filter, through)) {
    text += line(r);
    if (text.length >= CHUNK) {
      yield text;
      text = '';
    }
  }
  if (text) yield text;
}
