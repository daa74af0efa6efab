import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { Database } from '../db/database.ts';
import type { Checkpoint } from '../lib/audit-checkpoint.ts';
import type { Verification } from '../lib/audit-verify.ts';
import { AuditChain } from '../routers/audit/chain.ts';
import { checkpointSchema } from '../routers/audit/schemas.ts';
import { auditCheckpointSigner } from './audit-signing-key.ts';
import { ConfigError } from './config/load.ts';
import type { ConsoleConfig } from './config/schema.ts';
import { encryptKeyProvider } from './encrypt-key.ts';
import { storedSecretsKey } from './stored-secrets.ts';

/** The checkpoints of an `audit.checkpoint_path` file: one JSON object a line; a bad line is named. */
export function readCheckpointFile(path: string): Checkpoint[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read the checkpoint file ${path}: ${(error as Error).message}`);
  }
  return text
    .split('\n')
    .map((line, i) => ({ line: line.trim(), n: i + 1 }))
    .filter(({ line }) => line)
    .map(({ line, n }) => {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        value = undefined;
      }
      const parsed = checkpointSchema.safeParse(value);
      if (!parsed.success) throw new ConfigError(`${path} line ${n} is not a checkpoint`);
      return parsed.data;
    });
}

/** The one line `console audit verify` prints. */
export function describeVerification(v: Verification): string {
  const matching = v.checkpoint === null ? 'no checkpoint yet' : `matching checkpoint ${v.checkpoint}`;
  if (!v.broken) return `intact up to seq ${v.verified_seq}, ${matching}`;
  return `broken at seq ${v.broken.seq}: ${v.broken.kind} (${v.broken.reason}); intact up to seq ${v.verified_seq}, ${matching}`;
}

/**
 * `console audit verify [--checkpoints FILE]`: walks the configured database's audit chain against its stored
 * checkpoints, or those of FILE (kept outside the database, so they cannot be rewritten with it).
 */
export async function verifyAuditCommand(
  config: ConsoleConfig,
  db: Database,
  logger: Logger,
  checkpointFile: string | undefined,
): Promise<Verification> {
  const encryptKey = encryptKeyProvider(config.global.encrypt_key, db.dialect.localKeyFolder?.(db.options), logger);
  const signer = await auditCheckpointSigner(
    config.audit.signing_key,
    db,
    await storedSecretsKey(db, encryptKey, logger),
  );
  const chain = new AuditChain(db, signer, {
    checkpointPath: '',
    intervalMs: 0,
    onError: (error) => logger.error({ err: error }, 'audit verification failed'),
  });
  return chain.verify(checkpointFile === undefined ? undefined : readCheckpointFile(checkpointFile));
}
