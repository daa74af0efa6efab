import knexFactory, { type Knex } from 'knex';
import { dialectFor, type Dialect } from './dialects/index.ts';
import { migrateLatest, migrationsDone } from './migrate.ts';
import { defineModels, type Models } from './models.ts';
import type { DbLogger, DbOptions } from './options.ts';
import { tableNames, type TableNames } from './tables.ts';

export interface Database {
  readonly knex: Knex;
  readonly dialect: Dialect;
  readonly t: TableNames;
  readonly options: DbOptions;
  readonly models: Models;
  migrate(): Promise<void>;
  /** Reachable and migrated. */
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

interface QueryEvent {
  __knexQueryUid?: string;
  sql?: string;
}

/** Reports queries slower than the threshold, with their SQL text but never their bound values (secrets). */
function watchSlowQueries(knex: Knex, thresholdMs: number, logger: DbLogger): void {
  const started = new Map<string, number>();
  knex.on('query', (q: QueryEvent) => {
    if (q.__knexQueryUid) started.set(q.__knexQueryUid, performance.now());
  });
  const finish = (q: QueryEvent) => {
    if (!q.__knexQueryUid) return;
    const t0 = started.get(q.__knexQueryUid);
    started.delete(q.__knexQueryUid);
    if (t0 === undefined) return;
    const ms = performance.now() - t0;
    if (ms >= thresholdMs) logger.warn({ duration_ms: Math.round(ms * 1000) / 1000, sql: q.sql }, 'slow query');
  };
  knex.on('query-response', (_r: unknown, q: QueryEvent) => finish(q));
  knex.on('query-error', (_e: unknown, q: QueryEvent) => finish(q));
}

export function openDatabase(options: DbOptions, logger: DbLogger): Database {
  const dialect = dialectFor(options.driver);
  dialect.prepare?.(options);
  const knex = knexFactory(dialect.knexConfig(options));
  watchSlowQueries(knex, options.slowThresholdMs, logger);
  const t = tableNames(options.tablePrefix);
  return {
    knex,
    dialect,
    t,
    options,
    models: defineModels(knex, t, dialect),
    migrate: () => migrateLatest(knex, { t, dialect, options }, logger),
    async ready() {
      try {
        return await migrationsDone(knex, t);
      } catch {
        return false;
      }
    },
    close: () => knex.destroy(),
  };
}
