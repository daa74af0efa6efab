import type { Services } from './services.ts';

/** What the edge (REST adapter or /trpc) knows about the request. */
export interface RequestInfo {
  ip: string;
  userAgent: string;
  locale: string;
  authorization?: string;
  orgId?: string;
}

/** The authenticated caller, resolved by the `authed` middleware. */
export interface Caller {
  id: string;
  username: string;
  sessionId: string;
  isAdmin: boolean;
  permissions: ReadonlySet<string>;
}

export interface Context {
  services: Services;
  req: RequestInfo;
  caller?: Caller;
}
