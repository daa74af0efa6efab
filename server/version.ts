import { existsSync, readFileSync } from 'node:fs';

/** The package version, found from source (server/) and from the compiled build (dist/server/) alike. */
function packageVersion(): string {
  for (const up of ['../package.json', '../../package.json']) {
    const url = new URL(up, import.meta.url);
    if (existsSync(url)) return (JSON.parse(readFileSync(url, 'utf8')) as { name: string; version: string }).version;
  }
  return '0.0.0';
}

export const VERSION = packageVersion();
