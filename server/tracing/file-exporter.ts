import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ExportResultCode, hrTimeToMicroseconds, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/** One JSON object per span per line, appended to `path` (there is no official OTel JS file exporter for traces). */
export class FileSpanExporter implements SpanExporter {
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly path: string) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    const text = spans.map((s) => `${JSON.stringify(toJson(s))}\n`).join('');
    this.chain = this.chain
      .then(() => mkdir(dirname(this.path), { recursive: true }))
      .then(() => appendFile(this.path, text))
      .then(
        () => done({ code: ExportResultCode.SUCCESS }),
        (error: Error) => done({ code: ExportResultCode.FAILED, error }),
      );
  }

  async forceFlush(): Promise<void> {
    await this.chain;
  }

  shutdown(): Promise<void> {
    return this.forceFlush();
  }
}

function toJson(s: ReadableSpan) {
  const ctx = s.spanContext();
  return {
    trace_id: ctx.traceId,
    span_id: ctx.spanId,
    parent_span_id: s.parentSpanContext?.spanId,
    name: s.name,
    kind: s.kind,
    start_us: hrTimeToMicroseconds(s.startTime),
    duration_us: hrTimeToMicroseconds(s.duration),
    status: s.status,
    service_name: s.resource.attributes['service.name'],
    attributes: s.attributes,
    events: s.events.map((e) => ({ name: e.name, time_us: hrTimeToMicroseconds(e.time), attributes: e.attributes })),
  };
}
