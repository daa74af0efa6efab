import { Client, compressionAlgorithms, credentials, Metadata, status, type ChannelOptions } from '@grpc/grpc-js';
import { ConfigError } from '../config/load.ts';
import { PermanentExportError } from './retry.ts';
import { readTlsFiles, type GrpcBlock, type TlsConfig, type Transport } from './otlp.ts';

const EXPORT = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';

/** The codes OTLP/gRPC says to retry; any other refusal is final. */
const RETRYABLE = new Set<number>([
  status.CANCELLED,
  status.DEADLINE_EXCEEDED,
  status.RESOURCE_EXHAUSTED,
  status.ABORTED,
  status.OUT_OF_RANGE,
  status.UNAVAILABLE,
  status.DATA_LOSS,
]);

function channelCredentials(insecure: boolean, tls: TlsConfig | undefined) {
  if (insecure) return credentials.createInsecure();
  const verify = tls?.insecure_skip_verify ? { rejectUnauthorized: false, checkServerIdentity: () => undefined } : {};
  const files = readTlsFiles(tls, 'grpc');
  return credentials.createSsl(files.ca ?? null, files.key ?? null, files.cert ?? null, verify);
}

/**
 * `reconnection_period` is the time between connection attempts (the Collector's meaning): grpc-js's reconnect
 * backoff pinned to it. `service_config` is the channel's default service config (retry policies, timeouts).
 */
function channelOptions(g: GrpcBlock): ChannelOptions {
  const serverName = g.tls_config?.server_name;
  return {
    'grpc.default_compression_algorithm':
      g.compression === 'gzip' ? compressionAlgorithms.gzip : compressionAlgorithms.identity,
    ...(g.reconnection_period > 0 && {
      'grpc.initial_reconnect_backoff_ms': g.reconnection_period,
      'grpc.max_reconnect_backoff_ms': g.reconnection_period,
    }),
    ...(g.service_config && { 'grpc.service_config': g.service_config }),
    ...(serverName &&
      !g.insecure && { 'grpc.ssl_target_name_override': serverName, 'grpc.default_authority': serverName }),
  };
}

/** Unary TraceService/Export calls on one channel; the channel connects on the first export. */
export function grpcTransport(g: GrpcBlock): Transport {
  const target = g.endpoint.replace(/^https?:\/\//i, '').replace(/\/+$/, '');
  const channelCreds = channelCredentials(g.insecure, g.tls_config);
  let client: Client;
  try {
    client = new Client(target, channelCreds, channelOptions(g));
  } catch (error) {
    // grpc-js checks the service config when the channel is made: a bad one stops the start like any config error.
    throw new ConfigError(`config: tracing.grpc.service_config: ${(error as Error).message}`);
  }
  const metadata = new Metadata();
  for (const [k, v] of Object.entries(g.header)) metadata.set(k, v);
  return {
    send: (body) =>
      new Promise((resolve, reject) => {
        client.makeUnaryRequest(
          EXPORT,
          (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength),
          (b: Buffer) => b,
          body,
          metadata,
          { deadline: Date.now() + g.timeout },
          (error) => {
            if (!error) return resolve();
            reject(RETRYABLE.has(error.code) ? error : new PermanentExportError(error.message));
          },
        );
      }),
    close: () => client.close(),
  };
}
