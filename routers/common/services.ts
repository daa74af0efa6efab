import type { Logger } from 'pino';
import type { ChangeFeed } from '../../db/change-feed.ts';
import type { TaskEngine } from '../../engine/engine.ts';
import type { AuditChain } from '../audit/chain.ts';
import type { AuditLogService } from '../audit/service.ts';
import type { AuditWriter } from '../audit/writer.ts';
import type { IdentityStore } from '../auth/identity.ts';
import type { PasswordResetService } from '../auth/password-reset.ts';
import type { AuthService } from '../auth/service.ts';
import type { FileService } from '../files/service.ts';
import type { Mailer } from '../mail/mailer.ts';
import type { IdempotencyKeys } from './idempotency.ts';
import type { OAuthService } from '../oauth/service.ts';
import type { OrganizationService } from '../organizations/service.ts';
import type { OrgScopes } from '../organizations/scope.ts';
import type { PermissionCatalogue } from '../permissions/service.ts';
import type { RoleService } from '../roles/service.ts';
import type { ScheduleService } from '../schedules/service.ts';
import type { SettingsService } from '../settings/service.ts';
import type { SmtpService } from '../smtp/service.ts';
import type { TaskEventService } from '../task-events/service.ts';
import type { TaskService } from '../tasks/service.ts';
import type { UserExportService } from '../user-export/service.ts';
import type { UserService } from '../users/service.ts';

/** Everything a procedure may use, built once per console by server/console.ts. */
export interface Services {
  feed: ChangeFeed;
  logger: Logger;
  identities: IdentityStore;
  auth: AuthService;
  oauth: OAuthService;
  passwordReset: PasswordResetService;
  mailer: Mailer;
  users: UserService;
  roles: RoleService;
  organizations: OrganizationService;
  /** Checks `X-Scope-OrgID` and what the caller's membership grants there. */
  orgScopes: OrgScopes;
  idempotencyKeys: IdempotencyKeys;
  permissions: PermissionCatalogue;
  settings: SettingsService;
  smtp: SmtpService;
  audit: AuditWriter;
  auditLogs: AuditLogService;
  auditChain: AuditChain;
  engine: TaskEngine;
  tasks: TaskService;
  /** Live task events: tickets, streams and their limits. */
  taskEvents: TaskEventService;
  schedules: ScheduleService;
  files: FileService;
  userExport: UserExportService;
}
