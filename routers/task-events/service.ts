import { randomBytes } from 'node:crypto';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ChangeFeed } from '../../db/change-feed.ts';
import type { Database } from '../../db/database.ts';
import { insertEventTicket, redeemEventTicket } from '../../db/repositories/event-tickets.ts';
import type { EngineLogger } from '../../engine/types.ts';
import { AppError, fieldError, ForbiddenError, TooManyRequestsError, UnauthorizedError } from '../../lib/errors.ts';
import { ROLES_CHANNEL, SESSIONS_CHANNEL, USERS_CHANNEL } from '../auth/identity.ts';
import type { AuthService } from '../auth/service.ts';
import { sha256 } from '../auth/email-tokens.ts';
import type { Caller } from '../common/context.ts';
import { ORG_HEADER, ORGS_CHANNEL, type OrgScopes } from '../organizations/scope.ts';
import type { TaskEventHub } from './hub.ts';
import type { Subscription } from './subscription.ts';

/** The permission listing tasks needs: a stream shows the same tasks. */
export const EVENTS_PERMISSION = 'task:list';
const TICKET_TTL_MS = 60_000;
/** Open streams check their session again this often too (expiry, idle timeout), beside every change of it. */
const RECHECK_EVERY_MS = 15_000;
/** The channels whose changes can end a session or take the permission away: streams are checked again on each. */
const RECHECKED_ON = [SESSIONS_CHANNEL, USERS_CHANNEL, ROLES_CHANNEL, ORGS_CHANNEL];

export type Transport = 'sse' | 'trpc';

export interface StreamRequest {
  taskId?: string;
  /** `org_id` of the input or query: the organization whose tasks the stream shows. */
  org?: string;
  /** `X-Scope-OrgID` as sent, where the edge has not entered it (the REST stream). */
  orgHeader?: string;
  /** The organization the permission middleware entered from `X-Scope-OrgID` (/trpc); the requester acts in it. */
  orgId?: string;
  lastEventId?: string;
}

interface OpenStream {
  sub: Subscription;
  userId: string;
  sessionId: string;
  /** The organization it shows, whose roles grant (or no longer grant) the permission. */
  orgId: string | undefined;
  /** Opened by an administrator, so it shows every user's tasks. */
  admin: boolean;
}

/** Whether `caller` may hold a stream: every permission comes from their global roles and the organization in use. */
const mayStream = (caller: Caller) => caller.isAdmin || caller.permissions.has(EVENTS_PERMISSION);

export function createEventMetrics(registry: Registry) {
  const registers = [registry];
  return {
    open: new Gauge({
      name: 'events_streams_open',
      help: 'Live task event streams open on this node',
      labelNames: ['transport'],
      registers,
    }),
    sent: new Counter({
      name: 'events_sent_total',
      help: 'Live task events sent to clients by this node',
      labelNames: ['transport'],
      registers,
    }),
  };
}

/**
 * Live task events for callers: tickets for browsers, the per-user stream limit, and the check that ends a stream
 * within the change feed's delay once its session ends (logout, user disabled or deleted) or its user no longer
 * holds `task:list` where the stream acts (a role, the user's roles or a membership changed).
 */
export class TaskEventService {
  readonly metrics: ReturnType<typeof createEventMetrics>;
  private readonly streams = new Set<OpenStream>();
  private readonly perUser = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private checking = false;
  private checkAgain = false;

  constructor(
    private readonly deps: {
      db: Database;
      feed: ChangeFeed;
      auth: AuthService;
      orgScopes: OrgScopes;
      hub: TaskEventHub;
      registry: Registry;
      logger: EngineLogger;
      maxStreamsPerUser: number;
    },
  ) {
    this.metrics = createEventMetrics(deps.registry);
  }

  start(): void {
    this.deps.hub.start();
    // After the identity caches (built earlier) have dropped what changed, so the check reads it afresh.
    this.unsubscribe = this.deps.feed.subscribe((channel) => {
      if (RECHECKED_ON.includes(channel)) void this.recheck();
    });
    this.timer = setInterval(() => void this.recheck(), RECHECK_EVERY_MS).unref();
  }

  /** Ends every stream at once, so a node's shutdown does not wait for them. */
  stop(): void {
    clearInterval(this.timer);
    this.unsubscribe?.();
    this.deps.hub.stop();
  }

  async issueTicket(caller: Caller): Promise<{ ticket: string; expires_at: string }> {
    const ticket = randomBytes(32).toString('base64url');
    const expires = new Date(Date.now() + TICKET_TTL_MS);
    await insertEventTicket(this.deps.db, {
      ticket_hash: sha256(ticket),
      user_id: caller.id,
      session_id: caller.sessionId,
      expires_at: expires,
    });
    return { ticket, expires_at: expires.toISOString() };
  }

  /** The caller a ticket was issued to, using it up; 401 for an unknown, used or expired one. */
  async redeem(ticket: string): Promise<Caller> {
    const holder = await redeemEventTicket(this.deps.db, sha256(ticket), new Date());
    if (!holder) throw new UnauthorizedError('task.events_ticket_invalid');
    return this.deps.auth.authenticateSession(holder.user_id, holder.session_id);
  }

  /**
   * Opens a stream of the tasks the caller may see, within the organization the request names once the
   * caller's membership there is checked; 403 without the permission, 429 past the limit.
   */
  async open(requester: Caller, req: StreamRequest, transport: Transport): Promise<Subscription> {
    const { caller, orgId } = await this.scope(requester, req);
    if (!mayStream(caller)) throw new ForbiddenError('auth.missing_permission', { code: EVENTS_PERMISSION });
    const max = this.deps.maxStreamsPerUser;
    const count = this.perUser.get(caller.id) ?? 0;
    if (count >= max) throw new TooManyRequestsError('task.events_too_many', { max });
    this.perUser.set(caller.id, count + 1);
    const release = () => {
      const left = (this.perUser.get(caller.id) ?? 1) - 1;
      if (left > 0) this.perUser.set(caller.id, left);
      else this.perUser.delete(caller.id);
    };
    let sub: Subscription;
    try {
      sub = await this.deps.hub.open(
        { userId: caller.isAdmin ? undefined : caller.id, orgId, taskId: req.taskId },
        req.lastEventId,
      );
    } catch (error) {
      release();
      throw error;
    }
    const stream: OpenStream = { sub, userId: caller.id, sessionId: caller.sessionId, orgId, admin: caller.isAdmin };
    this.streams.add(stream);
    this.metrics.open.inc({ transport });
    sub.whenClosed(() => {
      this.streams.delete(stream);
      release();
      this.metrics.open.dec({ transport });
    });
    return sub;
  }

  /**
   * The one organization a stream acts in, and the caller with that organization's permissions only: the header
   * and `org_id` name the same one or the request is refused (400 naming `org_id`), so a permission held in
   * one organization never opens a stream of another.
   */
  private async scope(requester: Caller, req: StreamRequest): Promise<{ caller: Caller; orgId?: string }> {
    const entered =
      req.orgId === undefined && req.orgHeader !== undefined
        ? await this.deps.orgScopes.enter(requester, req.orgHeader)
        : { caller: requester, orgId: req.orgId };
    if (req.org === undefined) return entered;
    if (entered.orgId === undefined) return this.deps.orgScopes.enter(requester, req.org);
    if (req.org.toLowerCase() !== entered.orgId)
      throw fieldError('org_id', 'validation.same_org', { other: ORG_HEADER });
    return entered;
  }

  /** Checks every open stream's session, user and permission again; ends the streams no longer allowed. */
  private async recheck(): Promise<void> {
    if (this.checking) {
      this.checkAgain = true;
      return;
    }
    this.checking = true;
    try {
      do {
        this.checkAgain = false;
        for (const stream of [...this.streams]) await this.check(stream);
      } while (this.checkAgain);
    } finally {
      this.checking = false;
    }
  }

  private async check(stream: OpenStream): Promise<void> {
    try {
      const user = await this.deps.auth.authenticateSession(stream.userId, stream.sessionId);
      const { caller } =
        stream.orgId === undefined ? { caller: user } : await this.deps.orgScopes.enter(user, stream.orgId);
      // An administrator who is one no longer would still see every task.
      if (!mayStream(caller) || (stream.admin && !caller.isAdmin)) stream.sub.close('forbidden');
    } catch (error) {
      // 401: the session or user ended; 403 or 404: the membership or the organization did.
      if (error instanceof AppError && [401, 403, 404].includes(error.status))
        stream.sub.close(error.status === 401 ? 'session' : 'forbidden');
      else this.deps.logger.warn({ err: error }, 'checking a task event stream’s session failed');
    }
  }
}
