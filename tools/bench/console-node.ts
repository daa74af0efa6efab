// One Console engine node for bench:engine, as the console runs it (10 at once, database log backend): in the
// bench's own process, or in a worker process (engine-worker.ts) for the several-process row.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { startChangeFeed } from '../../db/change-feed.ts';
import { openDatabase, type Database } from '../../db/database.ts';
import type { DbOptions } from '../../db/options.ts';
import { TaskEngine } from '../../engine/engine.ts';
import { createLogSinks } from '../../engine/settings.ts';

export const CONCURRENCY = 10;

export interface ConsoleNode {
  db: Database;
  engine: TaskEngine;
  /** Stops the node; `drop` also removes its tables (the last node). */
  close(drop: boolean): Promise<void>;
}

export async function openConsoleNode(options: DbOptions): Promise<ConsoleNode> {
  const logger = pino({ level: 'silent' });
  const db = openDatabase(options, logger);
  await db.migrate();
  const feed = await startChangeFeed(db, logger);
  const files = mkdtempSync(join(tmpdir(), 'bench-engine-files-'));
  const settings = {
    get: <T>(key: string) => ({ task_max_concurrent: CONCURRENCY, task_log_storage_backend: 'database' })[key] as T,
    onChange: () => {},
  };
  const engine = new TaskEngine({
    db,
    feed,
    settings,
    registry: new Registry(),
    logger,
    logSinks: createLogSinks(db, files),
    config: {
      leaseTtlMs: 30_000,
      leaseRenewIntervalMs: 10_000,
      leaseAbortAt: 0.75,
      reaperIntervalMs: 15_000,
      pollIntervalMs: 1000,
      retryBackoffBaseMs: 1000,
      retryBackoffMaxMs: 300_000,
      fileUploadPath: files,
      shutdownTimeoutMs: 5000,
    },
  });
  return {
    db,
    engine,
    async close(drop) {
      await engine.stop();
      await feed.close();
      if (drop) await dropTables(db);
      await db.close();
      rmSync(files, { recursive: true, force: true });
    },
  };
}

/** Removes a bench node's tables from a PostgreSQL or MySQL database (SQLite and chdb files go with their folder). */
export async function dropTables(db: Database): Promise<void> {
  if (db.options.driver === 'postgres')
    for (const name of Object.values(db.t)) await db.knex.raw('drop table if exists ?? cascade', [name]);
  if (db.options.driver === 'mysql') {
    await db.knex.raw('set foreign_key_checks = 0');
    for (const name of Object.values(db.t)) await db.knex.raw('drop table if exists ??', [name]);
  }
}
