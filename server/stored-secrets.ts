import type { Logger } from 'pino';
import type { Database } from '../db/database.ts';
import { sealStoredSecrets } from '../db/repositories/secrets.ts';
import type { EncryptKey } from './encrypt-key.ts';

/**
 * The key generated secrets are sealed with (db/repositories/secrets.ts), once those an earlier version stored
 * as they are have been sealed; undefined on a shared database without `global.encrypt_key`, which keeps them
 * unsealed rather than refusing to start.
 */
export async function storedSecretsKey(
  db: Database,
  encryptKey: EncryptKey,
  logger: Logger,
): Promise<Buffer | undefined> {
  if (!encryptKey.available) {
    logger.warn(
      'global.encrypt_key is not set: the generated JWT secret and file-link key are stored unsealed in the database; set the same key on every node',
    );
    return undefined;
  }
  const key = encryptKey();
  const sealed = await sealStoredSecrets(db, key);
  if (sealed > 0) logger.info({ sealed }, 'sealed the stored secrets with the encryption key');
  return key;
}
