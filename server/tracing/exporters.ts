import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { ConsoleConfig } from '../config/schema.ts';
import { RetryingExporter, type RetryPolicy } from './retry.ts';

type TracingConfig = ConsoleConfig['tracing'];

/** Zipkin and the file have no `retry` key: one attempt, reported when it fails. */
const ONCE: RetryPolicy = { enabled: false, initial_interval: 0, max_interval: 0, max_elapsed_time: 0 };

/**
 * The exporter of the configured block, or none when tracing has no exporter. `http` sends protobuf, the OTLP
 * default; the standard OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (or OTEL_EXPORTER_OTLP_PROTOCOL) `http/json` sends JSON.
 * Each exporter's modules are loaded only when its block is configured: together they are tens of megabytes
 * of idle memory that an install without tracing would carry for nothing.
 */
export async function createExporter(
  t: TracingConfig,
  env: Record<string, string | undefined>,
  report: (error: Error) => void,
): Promise<SpanExporter | undefined> {
  if (t.http || t.grpc) {
    const [{ JsonTraceSerializer, ProtobufTraceSerializer }, { OtlpExporter }] = await Promise.all([
      import('@opentelemetry/otlp-transformer'),
      import('./otlp.ts'),
    ]);
    if (t.http) {
      const json = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL) === 'http/json';
      const { httpTransport } = await import('./otlp-http.ts');
      return new RetryingExporter(
        new OtlpExporter(json ? JsonTraceSerializer : ProtobufTraceSerializer, httpTransport(t.http, json)),
        t.http.retry,
        report,
      );
    }
    const { grpcTransport } = await import('./otlp-grpc.ts');
    return new RetryingExporter(
      new OtlpExporter(ProtobufTraceSerializer, grpcTransport(t.grpc!)),
      t.grpc!.retry,
      report,
    );
  }
  if (t.zipkin) {
    const { ZipkinExporter } = await import('@opentelemetry/exporter-zipkin');
    return new RetryingExporter(
      new ZipkinExporter({ url: t.zipkin.endpoint, serviceName: t.service_name }),
      ONCE,
      report,
    );
  }
  if (t.file) {
    const { FileSpanExporter } = await import('./file-exporter.ts');
    return new RetryingExporter(new FileSpanExporter(t.file.path), ONCE, report);
  }
  return undefined;
}
