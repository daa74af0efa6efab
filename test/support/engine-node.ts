import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { startChangeFeed, type ChangeFeed } from '../../db/change-feed.ts';
import type { Database } from '../../db/database.ts';
import { registerDatabaseMetrics } from '../../db/metrics.ts';
import type { NewTaskRow } from '../../db/tasks/row.ts';
import { TaskEngine } from '../../engine/engine.ts';
import { Scheduler } from '../../engine/scheduler.ts';
import { createLogSinks } from '../../engine/settings.ts';
import type { EngineConfig, EngineSettings } from '../../engine/types.ts';
import type { ConsoleConfigInput } from '../../server/config/schema.ts';
import { dropOwnTables, openTestDatabase } from './harness.ts';

/** Settings held in memory, changed by the test (what the settings service does through the database). */
export class TestSettings implements EngineSettings {
  private readonly handlers: ((key: string, value: unknown) => void)[] = [];
  constructor(private readonly values: Record<string, unknown> = {}) {}
  get<T>(key: string): T {
    if (!(key in this.values)) throw new Error(`setting ${key} not set`);
    return this.values[key] as T;
  }
  set(key: string, value: unknown): void {
    this.values[key] = value;
    for (const h of this.handlers) h(key, value);
  }
  onChange(handler: (key: string, value: unknown) => void): void {
    this.handlers.push(handler);
  }
}

/** Leases, polls and backoffs short enough for tests. */
export const FAST: Omit<EngineConfig, 'fileUploadPath'> = {
  leaseTtlMs: 2000,
  leaseRenewIntervalMs: 500,
  leaseAbortAt: 0.75,
  reaperIntervalMs: 300,
  pollIntervalMs: 200,
  retryBackoffBaseMs: 50,
  retryBackoffMaxMs: 200,
  shutdownTimeoutMs: 2000,
};

export interface EngineNode {
  db: Database;
  feed: ChangeFeed;
  engine: TaskEngine;
  scheduler: Scheduler;
  settings: TestSettings;
  registry: Registry;
  /** Stops the node; `drop` also removes the tables (the last node of a shared PostgreSQL/MariaDB schema). */
  close(opts?: { drop?: boolean }): Promise<void>;
}

export interface NodeOptions {
  config?: Partial<EngineConfig>;
  settings?: Record<string, unknown>;
  /** Change-feed poll interval (MySQL, SQLite). */
  feedPollMs?: number;
  start?: boolean;
}

/** The database options of a harness lane's `database()` keys, migrated. */
export async function openLaneDatabase(database: NonNullable<ConsoleConfigInput['database']>): Promise<Database> {
  const db = openTestDatabase(database);
  await db.migrate();
  return db;
}

/**
 * One engine node on its own connection to a (shared) database, without HTTP: what the many-node tests run
 * three of, and what the crash test runs in a child process.
 */
export async function startEngineNode(
  database: NonNullable<ConsoleConfigInput['database']>,
  o: NodeOptions = {},
): Promise<EngineNode> {
  const db = await openLaneDatabase(database);
  const logger = pino({ level: process.env.ENGINE_LOG ?? 'silent' });
  const feed = await startChangeFeed(db, logger, o.feedPollMs ?? 100);
  const settings = new TestSettings({
    task_max_concurrent: 10,
    task_log_storage_backend: 'database',
    task_log_retention_days: 30,
    audit_log_retention_days: 365,
    ...o.settings,
  });
  const registry = new Registry();
  registerDatabaseMetrics(registry, db);
  const fileUploadPath = o.config?.fileUploadPath ?? mkdtempSync(join(tmpdir(), 'engine-files-'));
  const engine = new TaskEngine({
    db,
    feed,
    settings,
    registry,
    logger,
    config: { ...FAST, fileUploadPath, ...o.config },
    logSinks: createLogSinks(db, fileUploadPath),
  });
  const scheduler = new Scheduler({ db, feed, engine, logger });
  if (o.start !== false) await engine.start();
  return {
    db,
    feed,
    engine,
    scheduler,
    settings,
    registry,
    async close({ drop = false } = {}) {
      await scheduler.stop();
      await engine.stop(500);
      await feed.close();
      if (drop) await dropOwnTables({ db }).catch(() => {});
      await db.close();
    },
  };
}

/** Polls `check` until it holds or `ms` passes; answers whether it held. */
export async function until(check: () => boolean | Promise<boolean>, ms = 5000, every = 20): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, every));
  }
}

/** A new system task's row of `type`, for tests that insert through the task store. */
export function newTaskRow(type: string): NewTaskRow {
  return {
    id: randomUUID(),
    type,
    category: 'system',
    payload: '{}',
    max_retries: 0,
    creator_id: null,
    cron_schedule_id: null,
    fire_key: null,
    org_id: null,
  };
}
