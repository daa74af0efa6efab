import { Counter, Histogram, type Registry } from 'prom-client';
import type { Database } from './database.ts';
import { RETRY_REASONS } from './retry.ts';

// Five values whatever the statement: a label per table or statement would grow without bound.
const OPERATIONS = ['select', 'insert', 'update', 'delete', 'other'] as const;
const FIRST_WORD = /^\s*(select|insert|update|delete)\b/i;

/** A statement's operation label: its first word when it is one of the four, else `other` (DDL, pragmas, CTEs). */
export function queryOperation(sql: string): (typeof OPERATIONS)[number] {
  const word = FIRST_WORD.exec(sql)?.[1];
  return word ? (word.toLowerCase() as (typeof OPERATIONS)[number]) : 'other';
}

/**
 * `db_retries_total{reason}`: database work run again after it lost to concurrent work (see retry.ts);
 * `db_query_duration_seconds{operation}`: every statement's time, from knex's announcement to its answer.
 */
export function registerDatabaseMetrics(registry: Registry, db: Database): void {
  const retries = new Counter({
    name: 'db_retries_total',
    help: 'Statements and transactions run again after a deadlock, lock-wait timeout or serialization failure',
    labelNames: ['reason'],
    registers: [registry],
  });
  // Every reason shows from the start, so a rate over it is defined before the first retry.
  for (const reason of RETRY_REASONS) retries.inc({ reason }, 0);
  db.onRetry((reason) => retries.inc({ reason }));
  const duration = new Histogram({
    name: 'db_query_duration_seconds',
    help: 'Database statements by operation (select, insert, update, delete, other)',
    labelNames: ['operation'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  // Bound once: a child's observe skips the label validation and hashing of each call.
  const byOperation = new Map(OPERATIONS.map((op) => [op, duration.labels(op)]));
  db.onQuery((sql, seconds) => byOperation.get(queryOperation(sql))!.observe(seconds));
}
