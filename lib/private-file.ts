import { chmodSync, closeSync, existsSync, fchmodSync, openSync, statSync } from 'node:fs';

const PRIVATE = 0o600;

/**
 * Creates `path` empty, readable and writable by its owner only whatever the umask (which can only take bits
 * away, so the mode is set again once open); fails when it exists.
 */
export function createPrivateFile(path: string): void {
  const fd = openSync(path, 'wx', PRIVATE);
  try {
    fchmodSync(fd, PRIVATE);
  } finally {
    closeSync(fd);
  }
}

/** Takes group and other access away from those of `paths` that exist (made before they were created private). */
export function makePrivate(...paths: string[]): void {
  for (const path of paths) if (existsSync(path) && (statSync(path).mode & 0o077) !== 0) chmodSync(path, PRIVATE);
}
