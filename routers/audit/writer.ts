import { randomUUID } from 'node:crypto';
import type { Database } from '../../db/database.ts';
import { appendAuditRecord } from '../../db/repositories/audit-chain.ts';
import type { AuditRecord } from '../../db/repositories/audit-logs.ts';
import type { RequestInfo } from '../common/context.ts';

export type AuditAction =
  | 'create'
  | 'update'
  | 'delete'
  | 'login'
  | 'login_failed'
  | 'logout'
  | 'export'
  | 'cancel'
  | 'retry'
  | 'toggle'
  | 'trigger'
  | 'password_change'
  | 'password_reset'
  | 'unlock'
  | 'verify';
export type AuditResource =
  'user' | 'role' | 'setting' | 'smtp' | 'task' | 'schedule' | 'session' | 'organization' | 'audit_log';

export interface AuditEntry {
  action: AuditAction;
  resource_type: AuditResource;
  resource_id?: string;
  status?: 'success' | 'failure';
  actor?: { id: string | null; username: string };
  req?: RequestInfo;
  details?: Record<string, unknown>;
}

const LOGIN_ACTIONS: ReadonlySet<AuditAction> = new Set(['login', 'login_failed']);

const SECRET_KEY = /pass(word)?|secret|token|mfa_code|encrypt_key|authorization/i;

/** Replaces every value under a secret-looking key with "***", at any depth. */
export function maskSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskSecrets);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_KEY.test(k) ? '***' : maskSecrets(v)]));
  }
  return value;
}

/** How a record is stored: appended to the chain (tools/bench/audit.ts passes a plain insert to compare). */
export type AppendAudit = (db: Database, record: AuditRecord) => Promise<unknown>;

export interface GeoLookup {
  (ip: string): { country?: string; city?: string } | undefined;
}

/**
 * The one way to write an audit record, appended to the hash chain (docs/audit-chain.md). A failed write never
 * fails the request that caused it: it is logged and counted instead.
 */
export class AuditWriter {
  constructor(
    private readonly db: Database,
    private readonly onFailure: (error: unknown) => void,
    private readonly geo?: GeoLookup,
    private readonly append: AppendAudit = appendAuditRecord,
  ) {}

  async write(entry: AuditEntry): Promise<void> {
    const details = maskSecrets(entry.details ?? {}) as Record<string, unknown>;
    if (entry.req && LOGIN_ACTIONS.has(entry.action) && this.geo) {
      const where = this.geo(entry.req.ip);
      if (where) details.geo = where;
    }
    try {
      await this.append(this.db, {
        id: randomUUID(),
        created_at: new Date().toISOString(),
        user_id: entry.actor?.id ?? null,
        username: entry.actor?.username ?? '',
        action: entry.action,
        resource_type: entry.resource_type,
        resource_id: entry.resource_id ?? '',
        status: entry.status ?? 'success',
        ip: entry.req?.ip ?? '',
        user_agent: (entry.req?.userAgent ?? '').slice(0, 512),
        org_id: entry.req?.orgId ?? null,
        details,
      });
    } catch (error) {
      this.onFailure(error);
    }
  }
}
