import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { ChangeFeed } from '../db/change-feed.ts';
import type { Database } from '../db/database.ts';
import { deleteExpiredEventTickets } from '../db/repositories/event-tickets.ts';
import { deleteExpiredIdempotencyKeys } from '../db/repositories/idempotency-keys.ts';
import { deleteExpiredOAuthStates } from '../db/repositories/oauth.ts';
import { getOrCreateSecret } from '../db/repositories/secrets.ts';
import { deleteExpiredUserTokens } from '../db/repositories/user-tokens.ts';
import { registerBuiltInSchedules } from '../engine/cleanup.ts';
import { TaskEngine } from '../engine/engine.ts';
import type { LogSinks } from '../engine/log-sinks.ts';
import { Scheduler } from '../engine/scheduler.ts';
import type { EngineSettings, TaskTracer } from '../engine/types.ts';
import type { AuditChain } from '../routers/audit/chain.ts';
import { registerAuditVerify } from '../routers/audit/verify-schedule.ts';
import type { AuditWriter } from '../routers/audit/writer.ts';
import { FileService } from '../routers/files/service.ts';
import { ScheduleService } from '../routers/schedules/service.ts';
import { UserTaskQuota } from '../routers/tasks/quota.ts';
import { TaskService } from '../routers/tasks/service.ts';
import { userExportRunner, USER_EXPORT_TYPE } from '../routers/user-export/runner.ts';
import { UserExportService } from '../routers/user-export/service.ts';
import type { ConsoleConfig } from './config/schema.ts';

export interface TaskParts {
  config: ConsoleConfig;
  db: Database;
  feed: ChangeFeed;
  settings: EngineSettings;
  registry: Registry;
  logger: Logger;
  audit: AuditWriter;
  auditChain: AuditChain;
  logSinks: LogSinks;
  tracer: TaskTracer | undefined;
  /** Seals the generated file-link key at rest (server/stored-secrets.ts). */
  secretsKey: Buffer | undefined;
}

/** The engine, the scheduler with the built-in schedules, the built-in runners, and the services the routers use. */
export async function assembleTasks({
  config,
  db,
  feed,
  settings,
  registry,
  logger,
  audit,
  auditChain,
  logSinks,
  tracer,
  secretsKey,
}: TaskParts) {
  const t = config.task;
  const engine = new TaskEngine({
    db,
    feed,
    settings,
    registry,
    logger,
    logSinks,
    tracer,
    config: {
      leaseTtlMs: t.lease_ttl,
      leaseRenewIntervalMs: t.lease_renew_interval,
      leaseAbortAt: t.lease_abort_at,
      reaperIntervalMs: t.reaper_interval,
      pollIntervalMs: t.poll_interval,
      retryBackoffBaseMs: t.retry_backoff_base,
      retryBackoffMaxMs: t.retry_backoff_max,
      fileUploadPath: config.server.file_upload_path,
      shutdownTimeoutMs: config.server.shutdown_timeout,
    },
  });
  const scheduler = new Scheduler({ db, feed, engine, logger });
  registerBuiltInSchedules({
    db,
    engine,
    scheduler,
    settings,
    credentialCleaners: [
      deleteExpiredUserTokens,
      deleteExpiredOAuthStates,
      deleteExpiredIdempotencyKeys,
      deleteExpiredEventTickets,
    ],
    removeAuditRecordsBefore: (before) => auditChain.removeBefore(before),
  });
  registerAuditVerify(engine, scheduler, auditChain, audit, logger);
  engine.register(USER_EXPORT_TYPE, userExportRunner(db), { maxRetries: 1 });
  const quota = new UserTaskQuota(db, config.quota.active_user_tasks);
  const fileSecret = await getOrCreateSecret(
    db,
    'file_signature_key',
    randomBytes(32).toString('base64url'),
    secretsKey,
  );
  return {
    engine,
    scheduler,
    services: {
      engine,
      tasks: new TaskService(db, engine, audit, quota, config.cache.size),
      schedules: new ScheduleService(scheduler, audit),
      files: new FileService(engine.artifacts, fileSecret, config.server.root_url),
      userExport: new UserExportService(engine, audit, quota),
    },
  };
}
