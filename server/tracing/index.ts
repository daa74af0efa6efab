import { randomFillSync } from 'node:crypto';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  context,
  isSpanContextValid,
  propagation,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Context,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { BasicTracerProvider, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { ConsoleConfig } from '../config/schema.ts';
import { createExporter } from './exporters.ts';

export interface Tracing {
  /** True when an exporter is configured: spans are recorded and sent. */
  readonly enabled: boolean;
  readonly tracer: Tracer;
  /** The context of an incoming request: its traceparent's trace, or a new trace id when there is none. */
  incoming(headers: Record<string, string | string[] | undefined>): Context;
  /** Sends what is buffered and what waits for a retry, then stops the exporter; a receiver that is down costs at most about twice its timeout. */
  shutdown(): Promise<void>;
}

const w3c = new W3CTraceContextPropagator();

// The context manager and the propagator are process-wide (AsyncLocalStorage; W3C traceparent on outgoing calls
// through `propagation.inject`); tracer providers stay per console, never global, so consoles in one process
// export to their own receivers.
let contextReady = false;
function ensureContextManager(): void {
  if (contextReady) return;
  contextReady = true;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(w3c);
}
const getter = {
  keys: (h: Record<string, unknown>) => Object.keys(h),
  get: (h: Record<string, unknown>, key: string) => h[key] as string | string[] | undefined,
};

// Random bytes drawn a few kilobytes at a time: a randomBytes call per request cost ~6% of a list request,
// and two randomUUID calls with their dashes removed still cost a microsecond and a half.
const pool = Buffer.alloc(24 * 256);
let used = pool.length;

/** A fresh, non-sampled trace: enough for ids in logs and envelopes when nothing is exported. */
export function unsampledTrace(): SpanContext {
  if (used + 24 > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const ids = pool.toString('hex', used, (used += 24));
  return { traceId: ids.slice(0, 32), spanId: ids.slice(32), traceFlags: TraceFlags.NONE };
}

const REPORT_EVERY_MS = 60_000;

/** The SDK, like the exporters, is loaded only when something is exported. */
async function createProvider(serviceName: string, exporter: SpanExporter): Promise<BasicTracerProvider> {
  const [{ BasicTracerProvider, BatchSpanProcessor }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
  ]);
  return new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    // Batching keeps export off the request path; the queue drops spans rather than grow when the receiver is down.
    spanProcessors: [
      new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000, maxQueueSize: 2048, exportTimeoutMillis: 10_000 }),
    ],
  });
}

export interface TracingOptions {
  /** Where OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL is read. */
  env: Record<string, string | undefined>;
  /** A failed export or shutdown flush, at most once a minute. */
  onError: (error: unknown) => void;
}

export async function createTracing(
  config: ConsoleConfig['tracing'],
  { env, onError }: TracingOptions,
): Promise<Tracing> {
  ensureContextManager();
  let reportedAt = -Infinity;
  // One report a minute: a receiver that is down fails every batch, and the shutdown flush with them.
  const report = (error: unknown) => {
    if (performance.now() - reportedAt < REPORT_EVERY_MS) return;
    reportedAt = performance.now();
    onError(error ?? new Error('trace export failed'));
  };
  const exporter = await createExporter(config, env, report);
  const provider = exporter ? await createProvider(config.service_name, exporter) : undefined;
  const tracer = provider ? provider.getTracer('console') : trace.getTracer('console-noop');
  let stopped: Promise<void> | undefined;
  return {
    enabled: provider !== undefined,
    tracer,
    incoming(headers) {
      // Only a traceparent gives the propagator anything to extract; most requests carry none.
      const active = context.active();
      const extracted = headers.traceparent === undefined ? active : w3c.extract(active, headers, getter);
      // With a provider the request span starts its own sampled trace; an unsampled made-up parent would stop it recording.
      return trace.getSpanContext(extracted) || provider
        ? extracted
        : trace.setSpanContext(extracted, unsampledTrace());
    },
    shutdown() {
      // The Zipkin exporter defers its send on a timer: without a flush first, shutdown drops the last spans.
      stopped ??= provider
        ? provider
            .forceFlush()
            .catch(report)
            .then(() => provider.shutdown())
            .catch(report)
        : Promise.resolve();
      return stopped;
    },
  };
}

/** The trace id of the active context, if any. */
export function activeTraceId(): string | undefined {
  const span = trace.getSpanContext(context.active());
  return span && isSpanContextValid(span) ? span.traceId : undefined;
}

/** Ends a span with the outcome of `error` (none: success). */
export function endSpan(span: Span, error?: unknown): void {
  if (error !== undefined) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  }
  span.end();
}
