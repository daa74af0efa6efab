import { Counter, type Registry } from 'prom-client';
import type { Database } from './database.ts';
import { RETRY_REASONS } from './retry.ts';

/** `db_retries_total{reason}`: database work run again after it lost to concurrent work (see retry.ts). */
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
}
