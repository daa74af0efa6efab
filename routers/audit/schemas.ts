import { z } from 'zod';
import { paginationInput, timestamp, uuidString } from '../common/schemas.ts';

export const auditSchema = z
  .object({
    id: uuidString,
    created_at: timestamp,
    user_id: uuidString.nullable(),
    username: z.string(),
    action: z.string(),
    resource_type: z.string(),
    resource_id: z.string(),
    status: z.enum(['success', 'failure']),
    ip: z.string(),
    user_agent: z.string(),
    org_id: uuidString.nullable(),
    details: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'AuditLog' });

const isoTime = z.iso.datetime({ offset: true });

export const listAuditInput = paginationInput.extend({
  user_id: z.uuid().optional(),
  action: z.string().max(32).optional(),
  resource_type: z.string().max(32).optional(),
  start_time: isoTime.optional(),
  end_time: isoTime.optional(),
});

export type ListAuditInput = z.infer<typeof listAuditInput>;

export const checkpointSchema = z
  .object({
    number: z.number().int().describe('The checkpoint number K, counting from 1'),
    size: z.number().int().describe('How many records the chain held: the seq of its last record'),
    hash: z.string().describe('That record’s hash (hex)'),
    time: timestamp.describe('When it was signed'),
    removed_through: z.number().int().describe('Records up to this seq had been removed by the retention cleanup'),
    removed_hash: z.string().describe('The hash of record `removed_through` (hex): the first record kept follows it'),
    signature: z.string().describe('Ed25519 signature (base64) of the checkpoint’s note, docs/audit-chain.md'),
  })
  .meta({ id: 'AuditCheckpoint' });

export const verificationSchema = z
  .object({
    intact: z.boolean(),
    first_seq: z.number().int().describe('The first seq kept after the retention cleanup'),
    verified_seq: z.number().int().describe('The chain is intact up to this seq'),
    checkpoint: z.number().int().nullable().describe('The newest checkpoint the intact part matches'),
    checkpoint_seq: z.number().int().nullable().describe('Its size'),
    broken: z
      .object({
        seq: z.number().int().describe('The first broken seq'),
        kind: z.enum(['edited', 'removed', 'inserted', 'reordered', 'checkpoint']),
        reason: z.string(),
      })
      .nullable()
      .describe('The first break; null when the chain is intact'),
  })
  .meta({ id: 'AuditVerification' });

export const publicKeySchema = z.object({
  algorithm: z.literal('Ed25519'),
  public_key: z.string().describe('The public key checkpoints are signed with, PEM (SPKI)'),
});

/** The export: the list's filters, and the format. */
export const exportAuditInput = listAuditInput.omit({ current: true, page_size: true }).extend({
  format: z.enum(['jsonl', 'csv']).default('jsonl'),
});
export type ExportAuditInput = z.infer<typeof exportAuditInput>;
