import type { Hit } from '../../lib/rate-windows.ts';
import type { Services } from './services.ts';

/** What the edge (REST adapter or /trpc) knows about the request. */
export interface RequestInfo {
  ip: string;
  userAgent: string;
  locale: string;
  authorization?: string;
  /** The `X-Scope-OrgID` header as sent; nothing trusts it before the permission middleware has checked it. */
  orgHeader?: string;
  /** The organization the request acts in: set from `orgHeader` once the caller was found to belong to it. */
  orgId?: string;
  /** The request's trace id (W3C traceparent or generated), for error answers. */
  traceId?: string;
  /** `Cache-Control: no-cache` was sent: lists kept while the database is unchanged are read anyway. */
  noCache?: boolean;
  /** The `Idempotency-Key` of a POST; what it does is decided in routers/common/idempotency.ts. */
  idempotency?: IdempotencyRequest;
  /** Reports a rate-limit window the request also counted against, for the answer's `X-RateLimit-*` headers. */
  counted?(hit: Hit): void;
  /** Reports the authenticated caller, for the request's access log line. */
  identified?(userId: string): void;
}

/** What a list read takes of its request: the organization it acts in, and whether a kept page may answer. */
export type ListScope = Pick<RequestInfo, 'orgId' | 'noCache'>;

/** An `Idempotency-Key` header and what the edge lets the key's check do. */
export interface IdempotencyRequest {
  /** The header as sent: checked only by procedures it applies to (others ignore it). */
  key: string;
  /** The calls of the HTTP request: a /trpc batch of several cannot share one key. */
  calls: number;
  /** How long a repeat waits for the request first sent with its key to finish. */
  waitMs: number;
  /** Marks the answer as a replay of the stored one (`Idempotent-Replayed: true`). */
  replayed(): void;
}

/** The authenticated caller, resolved by the `authed` middleware. */
export interface Caller {
  id: string;
  username: string;
  sessionId: string;
  isAdmin: boolean;
  /** Every permission the request's checks grant: global ones, plus those of the organization it acts in. */
  permissions: ReadonlySet<string>;
  /**
   * Set when `X-Scope-OrgID` added permissions: the organization, and the caller's global permissions alone (what
   * the caller holds in this one organization must not count as held everywhere, see routers/roles/guards.ts).
   */
  org?: { id: string; globalPermissions: ReadonlySet<string> };
}

export interface Context {
  services: Services;
  req: RequestInfo;
  caller?: Caller;
}

/** Who asks for a change and through which request: what services need for guards and audit records. */
export interface Actor {
  caller: Caller;
  req: RequestInfo;
}
