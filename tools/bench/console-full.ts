// One Console for bench:engine as an application runs it: `createConsole` with its default configuration (the task
// event recorder, metrics, audit, the change feed, the HTTP server listening, the logger at `info` writing to a
// file), so the row measures what users run, beside the bare engine of console-node.ts.
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { openDatabase } from '../../db/database.ts';
import type { DbOptions } from '../../db/options.ts';
import { createConsole, type Console } from '../../index.ts';
import { createLogger } from '../../server/logger.ts';
import { dropTables } from './console-node.ts';

export interface FullConsole {
  console: Console;
  /** Stops the console and removes its files and tables. */
  close(): Promise<void>;
}

/** The `database` config section for the options bench:engine builds for the bare engine. */
function databaseSection(o: DbOptions) {
  return {
    driver: o.driver,
    table_prefix: o.tablePrefix,
    path: o.path,
    host: o.host,
    port: o.port,
    username: o.username,
    password: o.password,
    schema: o.schema,
  };
}

export async function openFullConsole(options: DbOptions): Promise<FullConsole> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-console-'));
  const c = await createConsole({
    env: {},
    announce: () => {},
    // The logger `log.*` builds, with the lines `npm start` prints to stdout going to a file instead.
    logger: createLogger({
      level: 'info',
      format: 'json',
      path: dir,
      mode: 'release',
      destination: createWriteStream(join(dir, 'stdout.log')),
    }),
    config: {
      server: { port: 0, host: '127.0.0.1', file_upload_path: join(dir, 'uploads') },
      database: databaseSection(options),
    },
  });
  await c.listen();
  return {
    console: c,
    async close() {
      await c.close();
      const db = openDatabase(options, pino({ level: 'silent' }));
      await dropTables(db);
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
