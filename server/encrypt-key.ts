import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { BadRequestError } from '../lib/errors.ts';
import { encryptKeyBytes } from './config/schema.ts';

const KEY_FILE = 'console.key';

/**
 * The key secrets are sealed with (DESIGN §5): `global.encrypt_key` when configured. Without it a single-file
 * database keeps a generated key beside itself (no other node could need it); shared databases refuse to store
 * a secret, since nodes with different generated keys could not read each other's values.
 * Resolved when first needed, so a deployment without secrets never needs a key.
 */
export function encryptKeyProvider(configured: string | undefined, localFolder: string | undefined, logger: Logger): () => Buffer {
  let key = configured ? encryptKeyBytes(configured) : undefined;
  return () => {
    if (key) return key;
    if (!localFolder) throw new BadRequestError('smtp.encrypt_key_required');
    const file = join(localFolder, KEY_FILE);
    if (!existsSync(file)) {
      // 'wx' fails rather than overwrites when another process created the file meanwhile.
      try {
        writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
        logger.warn({ file }, 'global.encrypt_key is not set: generated an encryption key beside the SQLite database; back it up with the database');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
    key = encryptKeyBytes(readFileSync(file, 'utf8').trim());
    if (!key) throw new Error(`${file} does not hold a 32-byte key`);
    return key;
  };
}
