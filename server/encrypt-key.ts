import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { BadRequestError } from '../lib/errors.ts';
import { encryptKeyBytes } from './config/schema.ts';

const KEY_FILE = 'console.key';

/**
 * The key secrets are sealed with (docs/decisions.md "Settings and audit"): `global.encrypt_key` when configured. Without it a single-file
 * database keeps a generated key beside itself (no other node could need it); shared databases refuse to store
 * a secret, since nodes with different generated keys could not read each other's values.
 * Resolved when first needed, so a deployment without secrets never needs a key.
 */
export interface EncryptKey {
  /** The key; throws 400 `E4001` naming `global.encrypt_key` when there is none to be had. */
  (): Buffer;
  /** Whether a key is configured or may be generated (a single-file database). */
  readonly available: boolean;
}

export function encryptKeyProvider(
  configured: string | undefined,
  localFolder: string | undefined,
  logger: Logger,
): EncryptKey {
  let key = configured ? encryptKeyBytes(configured) : undefined;
  const provide = () => {
    if (key) return key;
    if (!localFolder) throw new BadRequestError('smtp.encrypt_key_required');
    const file = join(localFolder, KEY_FILE);
    if (!existsSync(file)) {
      // 'wx' fails rather than overwrites when another process created the file meanwhile.
      try {
        writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
        logger.warn(
          { file },
          'global.encrypt_key is not set: generated an encryption key beside the SQLite database; back it up with the database',
        );
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
    key = encryptKeyBytes(readFileSync(file, 'utf8').trim());
    if (!key) throw new Error(`${file} does not hold a 32-byte key`);
    return key;
  };
  return Object.assign(provide, { available: key !== undefined || localFolder !== undefined });
}

/**
 * Puts the generated key file beside a backup copy (`console backup`), so that the copy's folder opens with its
 * secrets readable. Returns the file, or undefined when no key was generated (no secret stored yet).
 */
export function copyKeyFile(localFolder: string, toFolder: string): string | undefined {
  const from = join(localFolder, KEY_FILE);
  if (!existsSync(from)) return undefined;
  const to = join(toFolder, KEY_FILE);
  const key = readFileSync(from, 'utf8');
  if (existsSync(to)) {
    // A folder holding another database's key: replacing it would lock that database's secrets away.
    if (resolve(to) !== resolve(from) && readFileSync(to, 'utf8') !== key)
      throw new Error(`${to} holds another key; back up into another folder`);
    return to;
  }
  writeFileSync(to, key, { mode: 0o600, flag: 'wx' });
  return to;
}
