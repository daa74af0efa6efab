import { context, SpanKind, trace } from '@opentelemetry/api';
import type { QueryTracer } from '../../db/options.ts';
import type { TaskTracer } from '../../engine/types.ts';
import { endSpan, unsampledTrace, type Tracing } from './index.ts';

const noQuerySpan = { end() {} };

/** Query spans only under a recorded span (a request, a task run): the engine's polling would otherwise flood the receiver with root spans. */
export function queryTracer(tracing: Tracing): QueryTracer {
  return {
    startQuery(sql, dialect) {
      if (!trace.getSpan(context.active())?.isRecording()) return noQuerySpan;
      const span = tracing.tracer.startSpan(`db ${sql.split(/\s/, 1)[0]!.toLowerCase()}`, {
        kind: SpanKind.CLIENT,
        attributes: { 'db.system': dialect, 'db.statement': sql },
      });
      return { end: (error) => endSpan(span, error) };
    },
  };
}

/**
 * Each task run is a root span of its own trace: runs happen long after, and on other nodes than, the request that
 * created the task. Without an exporter the run still gets a trace id of its own, for its log lines.
 */
export function taskTracer(tracing: Tracing): TaskTracer {
  return {
    startRun(task) {
      const span = tracing.enabled
        ? tracing.tracer.startSpan(`task ${task.type}`, {
            root: true,
            kind: SpanKind.CONSUMER,
            attributes: {
              'task.id': task.id,
              'task.type': task.type,
              'task.category': task.category,
              'task.attempt': task.attempt,
            },
          })
        : trace.wrapSpanContext(unsampledTrace());
      const active = trace.setSpan(context.active(), span);
      return {
        traceId: span.spanContext().traceId,
        within: (fn) => context.with(active, fn),
        end(outcome, error) {
          span.setAttribute('task.outcome', outcome);
          endSpan(span, outcome === 'failed' || outcome === 'retry' ? (error ?? outcome) : undefined);
        },
      };
    },
  };
}
