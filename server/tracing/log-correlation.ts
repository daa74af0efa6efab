import pino, { type Logger } from 'pino';
import { activeTraceId } from './index.ts';

type Mixin = (obj: object, level: number, logger: Logger) => object;

/**
 * A child logger whose lines carry the active trace id (a request's, a task run's). A mixin rather than a child per
 * request: services hold the one logger, and the active context finds the trace wherever they log from.
 */
export function withTraceIds(logger: Logger): Logger {
  const child = logger.child({}) as Logger & Record<symbol, Mixin | undefined>;
  const inherited = child[pino.symbols.mixinSym];
  child[pino.symbols.mixinSym] = (obj, level, l) => {
    const base = inherited?.(obj, level, l) ?? {};
    const traceId = activeTraceId();
    return traceId ? { ...base, trace_id: traceId } : base;
  };
  return child;
}
