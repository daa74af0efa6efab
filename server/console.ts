import { randomBytes } from 'node:crypto';
import type { ConnectionOptions } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { startChangeFeed } from '../db/change-feed.ts';
import { openDatabase, type Database } from '../db/database.ts';
import { registerDatabaseMetrics } from '../db/metrics.ts';
import { getOrCreateSecret } from '../db/repositories/secrets.ts';
import type { TaskEngine } from '../engine/engine.ts';
import type { Scheduler } from '../engine/scheduler.ts';
import { createLogSinks, declareEngineSettings } from '../engine/settings.ts';
import { SettingsRegistry } from '../lib/settings-registry.ts';
import { AuditChain } from '../routers/audit/chain.ts';
import { AuditLogService } from '../routers/audit/service.ts';
import { AuditWriter, type AppendAudit } from '../routers/audit/writer.ts';
import { ensureAdminUser, ensureSystemRoles } from '../routers/auth/bootstrap.ts';
import { IdentityStore, ROLES_CHANNEL, USERS_CHANNEL } from '../routers/auth/identity.ts';
import { LoginGuard } from '../routers/auth/login-guard.ts';
import { PasswordHasher } from '../routers/auth/password-hash.ts';
import { PasswordResetService } from '../routers/auth/password-reset.ts';
import { AuthService } from '../routers/auth/service.ts';
import { TokenSigner } from '../routers/auth/tokens.ts';
import { Mailer } from '../routers/mail/mailer.ts';
import { MailTemplates } from '../routers/mail/templates.ts';
import { OAuthService } from '../routers/oauth/service.ts';
import { StateSigner } from '../routers/oauth/state.ts';
import { OrganizationService } from '../routers/organizations/service.ts';
import { ORGS_CHANNEL, OrgScopes } from '../routers/organizations/scope.ts';
import { PermissionCatalogue } from '../routers/permissions/service.ts';
import { RoleService } from '../routers/roles/service.ts';
import { declareCoreSettings } from '../routers/settings/definitions.ts';
import { SettingsService } from '../routers/settings/service.ts';
import { SmtpService } from '../routers/smtp/service.ts';
import { TaskEventHub } from '../routers/task-events/hub.ts';
import { TASK_EVENTS_RETENTION_MS, TaskEventRecorder } from '../routers/task-events/recorder.ts';
import { TaskEventService } from '../routers/task-events/service.ts';
import { FeedCache } from '../routers/common/feed-cache.ts';
import { IdempotencyKeys } from '../routers/common/idempotency.ts';
import type { Services } from '../routers/common/services.ts';
import { UserService } from '../routers/users/service.ts';
import { loadConfig, type LoadOptions } from './config/load.ts';
import type { ConsoleConfig } from './config/schema.ts';
import { databaseOptions } from './database-options.ts';
import { encryptKeyProvider } from './encrypt-key.ts';
import { auditCheckpointSigner } from './audit-signing-key.ts';
import { storedSecretsKey } from './stored-secrets.ts';
import { openGeoIp } from './geoip.ts';
import { buildHttpApp } from './http/app.ts';
import { createMetrics, type Metrics } from './http/metrics.ts';
import { createLogger } from './logger.ts';
import { VERSION } from './version.ts';
import { createTracing } from './tracing/index.ts';
import { queryTracer, taskTracer } from './tracing/injected.ts';
import { withTraceIds } from './tracing/log-correlation.ts';
import { assembleTasks } from './tasks.ts';

export interface ConsoleOptions extends LoadOptions {
  /** Where the generated admin password is shown once; defaults to the terminal (stdout, never the logger). */
  announce?: (text: string) => void;
  /** Replaces the logger built from `log.*` (tests capture logs this way). */
  logger?: Logger;
  /** TLS options for SMTP connections, such as a private CA (`{ca}`) for a mail relay with its own certificate. */
  mailTls?: ConnectionOptions;
  /**
   * @internal For tools/bench/audit.ts only: how audit records are stored instead of appending to the chain, so
   * one run can measure writes with the chain and without it. Not a configuration key on purpose.
   */
  auditAppend?: AppendAudit;
}

export interface Console {
  readonly config: ConsoleConfig;
  readonly logger: Logger;
  readonly db: Database;
  readonly services: Services;
  readonly metrics: Metrics;
  /** Permissions an embedding application adds: `c.permissions.register({code, name, module})`. */
  readonly permissions: Services['permissions'];
  /** The Fastify instance, for applications that add their own routes before `listen()`. */
  readonly http: FastifyInstance;
  /** The task engine: `c.engine.register(type, runner, options)`, `c.engine.create({...})` (docs/engine.md). */
  readonly engine: TaskEngine;
  /** Cron schedules: `c.scheduler.define({id, name, spec, taskType, timezone, payload})`. */
  readonly scheduler: Scheduler;
  listen(): Promise<{ port: number; host: string }>;
  /** Graceful shutdown: in-flight requests finish within `server.shutdown_timeout`, then everything closes. */
  close(): Promise<void>;
}

/** Builds a ready-to-serve Console: config, database (migrated), identity bootstrap, HTTP app. */
export async function createConsole(options: ConsoleOptions = {}): Promise<Console> {
  const config = loadConfig({ ...options, env: options.env ?? process.env });
  const logger = withTraceIds(
    options.logger ??
      createLogger({
        level: config.log.level,
        format: config.log.format,
        path: config.log.path,
        mode: config.server.mode,
      }),
  );
  // What is opened is closed again if a later step fails, so a failed start leaves no pool or listener behind.
  const opened: (() => Promise<void>)[] = [];
  try {
    return await assemble(config, logger, options, opened);
  } catch (error) {
    for (const close of opened.reverse()) await close().catch(() => {});
    throw error;
  }
}

async function assemble(
  config: ConsoleConfig,
  logger: Logger,
  options: ConsoleOptions,
  opened: (() => Promise<void>)[],
): Promise<Console> {
  const tracing = await createTracing(config.tracing, {
    env: options.env ?? process.env,
    onError: (error) =>
      logger.warn(
        { err: error },
        'trace export failed; failed batches are retried as tracing.*.retry allows, then dropped',
      ),
  });
  opened.push(() => tracing.shutdown());
  const db = openDatabase(databaseOptions(config), logger, tracing.enabled ? queryTracer(tracing) : undefined);
  opened.push(() => db.close());
  await db.migrate();
  const feed = await startChangeFeed(db, logger);
  opened.push(() => feed.close());
  const registry = new SettingsRegistry();
  declareCoreSettings(registry);
  const logSinks = createLogSinks(db, config.server.file_upload_path);
  declareEngineSettings(registry, logSinks);
  const metrics = createMetrics(VERSION);
  registerDatabaseMetrics(metrics.registry, db);
  const geo = await openGeoIp(config.server.geoip_db_path);
  const audit = new AuditWriter(
    db,
    (error) => {
      metrics.auditWriteFailures.inc();
      logger.error({ err: error }, 'audit write failed');
    },
    geo,
    options.auditAppend,
  );
  const settings = new SettingsService(db, feed, registry, audit);
  await settings.start();
  const encryptKey = encryptKeyProvider(config.global.encrypt_key, db.dialect.localKeyFolder?.(db.options), logger);
  const secretsKey = await storedSecretsKey(db, encryptKey, logger);
  const jwtSecret =
    config.jwt.secret ?? (await getOrCreateSecret(db, 'jwt_secret', randomBytes(48).toString('base64url'), secretsKey));
  const auditChain = new AuditChain(db, await auditCheckpointSigner(config.audit.signing_key, db, secretsKey), {
    checkpointPath: config.audit.checkpoint_path,
    intervalMs: config.audit.checkpoint_interval,
    metrics: {
      verified: (result) => {
        metrics.auditVerifiedSeq.set(result.verified_seq);
        metrics.auditChainIntact.set(result.intact ? 1 : 0);
      },
    },
    onError: (error, what) => logger.error({ err: error }, `${what} failed`),
  });
  const hasher = new PasswordHasher(config.security.scrypt_cost);
  const tokens = new TokenSigner(jwtSecret, config.jwt.expiration, config.cache.size);
  const identities = new IdentityStore(db, feed, config.cache.size);
  const permissions = new PermissionCatalogue();
  const orgScopes = new OrgScopes(db, feed, permissions, config.cache.size);
  const tasks = await assembleTasks({
    config,
    db,
    feed,
    settings,
    registry: metrics.registry,
    logger,
    audit,
    auditChain,
    logSinks,
    tracer: taskTracer(tracing),
    secretsKey,
  });
  const smtp = new SmtpService(db, encryptKey, audit, logger, options.mailTls);
  const mailer = new Mailer(
    smtp,
    new MailTemplates(config.mail.template_path, config.server.root_url),
    metrics.mailSent,
    logger,
  );
  const users = new UserService(
    db,
    identities,
    hasher,
    settings,
    audit,
    new FeedCache(feed, [USERS_CHANNEL, ROLES_CHANNEL], config.cache.size),
    new FeedCache(feed, [USERS_CHANNEL, ROLES_CHANNEL], 1),
    mailer,
  );
  const loginGuard = new LoginGuard(config.rate_limit.enabled ? config.rate_limit.login_per_minute : undefined);
  const auth = new AuthService(db, identities, tokens, hasher, settings, audit, mailer, loginGuard);
  const taskEvents = new TaskEventService({
    db,
    feed,
    auth,
    orgScopes,
    hub: new TaskEventHub(db, feed, logger),
    registry: metrics.registry,
    logger,
    maxStreamsPerUser: config.events.max_streams_per_user,
  });
  const recorder = new TaskEventRecorder(db, feed, logger, TASK_EVENTS_RETENTION_MS);
  const oauth = new OAuthService(
    db,
    auth,
    users,
    hasher,
    new StateSigner(jwtSecret),
    {
      enabled: config.oauth.enabled,
      providers: config.oauth.providers,
      timeoutMs: config.oauth.timeout,
      rootUrl: config.server.root_url,
    },
    logger,
  );
  const services: Services = {
    feed,
    logger,
    identities,
    permissions,
    settings,
    audit,
    auditLogs: new AuditLogService(db, config.cache.size, audit),
    auditChain,
    smtp,
    mailer,
    auth,
    oauth,
    passwordReset: new PasswordResetService(db, users, mailer, config.web.enabled ? config.web.base_path : undefined),
    users,
    roles: new RoleService(db, identities, permissions, audit, new FeedCache(feed, [ROLES_CHANNEL], config.cache.size)),
    orgScopes,
    idempotencyKeys: new IdempotencyKeys(db, config.quota.idempotency_keys_per_day),
    organizations: new OrganizationService(
      db,
      orgScopes,
      identities,
      audit,
      new FeedCache(feed, [ORGS_CHANNEL], config.cache.size),
    ),
    ...tasks.services,
    taskEvents,
  };

  await ensureSystemRoles(db, permissions);
  const admin = await ensureAdminUser(db, hasher, {
    username: config.bootstrap.admin_username,
    email: config.bootstrap.admin_email,
    password: config.bootstrap.admin_password,
  });
  if (admin?.generatedPassword) {
    const announce = options.announce ?? ((text: string) => process.stdout.write(text));
    announce(
      `\nCreated administrator "${config.bootstrap.admin_username}" with password: ${admin.generatedPassword}\nIt is shown only this once; change it after logging in, or reset it with: npm run cli -- admin reset-password\n\n`,
    );
  }

  const { app: http, drain } = await buildHttpApp({
    config,
    services,
    ready: () => db.ready(),
    logger,
    metrics,
    tracing,
    version: VERSION,
  });
  opened.push(() => http.close());
  recorder.start(tasks.engine.changes);
  opened.push(() => recorder.stop());
  taskEvents.start();
  opened.push(async () => taskEvents.stop());
  await tasks.engine.start();
  opened.push(() => tasks.engine.stop());
  await tasks.scheduler.start();
  auditChain.start();
  opened.push(() => auditChain.stop());
  let closing: Promise<void> | undefined;

  return {
    config,
    logger,
    db,
    services,
    metrics,
    permissions,
    http,
    engine: tasks.engine,
    scheduler: tasks.scheduler,
    async listen() {
      await http.listen({ host: config.server.host, port: config.server.port });
      const address = http.server.address();
      const port = typeof address === 'object' && address ? address.port : config.server.port;
      logger.info({ host: config.server.host, port }, 'console listening');
      services.oauth.warmUp();
      return { port, host: config.server.host };
    },
    close() {
      closing ??= (async () => {
        const deadline = setTimeout(() => http.server.closeAllConnections?.(), config.server.shutdown_timeout);
        // Open event streams would hold the drain until the deadline: they end first, and clients reconnect elsewhere.
        taskEvents.stop();
        try {
          await drain.drain();
          await http.close();
        } finally {
          clearTimeout(deadline);
        }
        await mailer.idle();
        await tasks.scheduler.stop();
        await tasks.engine.stop();
        // After everything that audits: the last records are signed before the node goes.
        await auditChain.stop();
        await recorder.stop();
        await feed.close();
        await db.close();
        // Last, so the spans of the shutdown's own queries and task hand-backs go out too.
        await tracing.shutdown();
        logger.info('console stopped');
      })();
      return closing;
    },
  };
}
