// oidc-provider ships no type declarations; the tests use this much of it.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    /** A Koa middleware around the provider's own (its `ctx.body` is the answer about to be sent). */
    use(
      middleware: (ctx: { path: string; status: number; body: unknown }, next: () => Promise<void>) => Promise<void>,
    ): void;
  }
}
