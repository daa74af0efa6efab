import { readFileSync } from 'node:fs';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ConfigError } from '../config/load.ts';
import type { ConsoleConfig } from '../config/schema.ts';

type Tracing = ConsoleConfig['tracing'];
export type HttpBlock = NonNullable<Tracing['http']>;
export type GrpcBlock = NonNullable<Tracing['grpc']>;
export type TlsConfig = NonNullable<HttpBlock['tls_config']>;

/** The files `tls_config` names, read once at start: one that cannot be read stops the start like a bad value. */
export function readTlsFiles(tls: TlsConfig | undefined, block: 'http' | 'grpc') {
  const read = (key: 'ca_file' | 'cert_file' | 'key_file') => {
    const path = tls?.[key];
    if (!path) return undefined;
    try {
      return readFileSync(path);
    } catch {
      throw new ConfigError(`config: tracing.${block}.tls_config.${key}: cannot read ${path}`);
    }
  };
  return { ca: read('ca_file'), cert: read('cert_file'), key: read('key_file') };
}

/** One request to the receiver: resolves when it took the batch, rejects (PermanentExportError when final) otherwise. */
export interface Transport {
  send(body: Uint8Array): Promise<void>;
  close(): void;
}

/** otlp-transformer's serializers, which the OpenTelemetry exporters use too. */
export interface Serializer {
  serializeRequest(spans: ReadableSpan[]): Uint8Array | undefined;
}

/**
 * OTLP over a transport of ours: the OpenTelemetry JS exporters retry with fixed parameters and build their gRPC
 * channel with fixed options, so the `retry`, `reconnection_period` and `service_config` keys could not be applied
 * through them. Retrying is RetryingExporter's; each export here is a single request.
 */
export class OtlpExporter implements SpanExporter {
  constructor(
    private readonly serializer: Serializer,
    private readonly transport: Transport,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    const body = this.serializer.serializeRequest(spans);
    if (!body) return done({ code: ExportResultCode.FAILED, error: new Error('spans could not be serialized') });
    this.transport.send(body).then(
      () => done({ code: ExportResultCode.SUCCESS }),
      (error: Error) => done({ code: ExportResultCode.FAILED, error }),
    );
  }

  async shutdown(): Promise<void> {
    this.transport.close();
  }
}
