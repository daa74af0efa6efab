import { readFileSync } from 'node:fs';
import { credentials, Metadata } from '@grpc/grpc-js';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { ZipkinExporter } from '@opentelemetry/exporter-zipkin';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { ConsoleConfig } from '../config/schema.ts';
import { FileSpanExporter } from './file-exporter.ts';

type TracingConfig = ConsoleConfig['tracing'];
type Tls = NonNullable<NonNullable<TracingConfig['http']>['tls_config']>;

/** The exporters' own enum, whose values are the config's 'gzip' and 'none'. */
type Compression = NonNullable<NonNullable<ConstructorParameters<typeof ProtoExporter>[0]>['compression']>;

const read = (path: string | undefined) => (path ? readFileSync(path) : undefined);

/** SPEC endpoints are host:port; a full URL is accepted as given. */
function baseUrl(endpoint: string, insecure: boolean): string {
  return /^[a-z]+:\/\//i.test(endpoint) ? endpoint.replace(/\/+$/, '') : `${insecure ? 'http' : 'https'}://${endpoint}`;
}

function tlsAgentOptions(tls: Tls | undefined) {
  if (!tls) return undefined;
  return { ca: read(tls.ca_file), cert: read(tls.cert_file), key: read(tls.key_file), servername: tls.server_name, rejectUnauthorized: !tls.insecure_skip_verify };
}

function grpcCredentials(insecure: boolean, tls: Tls | undefined) {
  if (insecure) return credentials.createInsecure();
  const skip = tls?.insecure_skip_verify ? { checkServerIdentity: () => undefined } : {};
  return credentials.createSsl(read(tls?.ca_file) ?? null, read(tls?.key_file) ?? null, read(tls?.cert_file) ?? null, skip);
}

/** Failed exports are reported (the caller rate-limits); the batch is dropped, never retried forever. */
class ReportingExporter implements SpanExporter {
  constructor(
    private readonly inner: SpanExporter,
    private readonly report: (error: Error | undefined) => void,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inner.export(spans, (result) => {
      if (result.code !== ExportResultCode.SUCCESS) this.report(result.error);
      done(result);
    });
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

/**
 * The exporter of the configured block, or none when tracing has no exporter. `http` sends protobuf, the OTLP
 * default; the standard OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (or OTEL_EXPORTER_OTLP_PROTOCOL) `http/json` sends JSON.
 */
export function createExporter(t: TracingConfig, env: Record<string, string | undefined>, report: (error: Error | undefined) => void): SpanExporter | undefined {
  const exporter = exporterFor(t, env);
  return exporter && new ReportingExporter(exporter, report);
}

function exporterFor(t: TracingConfig, env: Record<string, string | undefined>): SpanExporter | undefined {
  if (t.http) {
    const h = t.http;
    const path = h.url_path.startsWith('/') ? h.url_path : `/${h.url_path}`;
    const json = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL) === 'http/json';
    return new (json ? JsonExporter : ProtoExporter)({
      url: baseUrl(h.endpoint, h.insecure) + path,
      headers: h.header,
      timeoutMillis: h.timeout,
      compression: h.compression as Compression,
      httpAgentOptions: tlsAgentOptions(h.tls_config) ?? {},
    });
  }
  if (t.grpc) {
    const g = t.grpc;
    const metadata = new Metadata();
    for (const [k, v] of Object.entries(g.header)) metadata.set(k, v);
    return new GrpcExporter({
      url: baseUrl(g.endpoint, g.insecure),
      metadata,
      timeoutMillis: g.timeout,
      compression: g.compression as Compression,
      credentials: grpcCredentials(g.insecure, g.tls_config),
    });
  }
  if (t.zipkin) return new ZipkinExporter({ url: t.zipkin.endpoint, serviceName: t.service_name });
  if (t.file) return new FileSpanExporter(t.file.path);
  return undefined;
}
