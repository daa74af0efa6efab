import { generateKeyPairSync } from 'node:crypto';
import type { Database } from '../db/database.ts';
import { getOrCreateSecret } from '../db/repositories/secrets.ts';
import { CheckpointSigner, signingKeyFrom } from '../lib/audit-checkpoint.ts';

/**
 * The key audit checkpoints are signed with: `audit.signing_key` when configured, else one generated once and
 * stored in the database (sealed with the encryption key, as the JWT secret is), so every node signs with it.
 */
export async function auditCheckpointSigner(
  configured: string | undefined,
  db: Database,
  secretsKey: Buffer | undefined,
): Promise<CheckpointSigner> {
  const text =
    configured ??
    (await getOrCreateSecret(
      db,
      'audit_signing_key',
      generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
      secretsKey,
    ));
  return new CheckpointSigner(signingKeyFrom(text));
}
