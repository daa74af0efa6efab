// Trace receivers written for the tests, all on loopback: OTLP/HTTP (JSON and protobuf, gzip or plain),
// OTLP/gRPC, and Zipkin v2 JSON, optionally over TLS. They keep every span and the headers each export arrived with.
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type RequestListener } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';

const Request = protobuf
  .parse(
    `syntax = "proto3"; package opentelemetry.proto;
message AnyValue { oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; } }
message KeyValue { string key = 1; AnyValue value = 2; }  message Resource { repeated KeyValue attributes = 1; }
message InstrumentationScope { string name = 1; string version = 2; }
message Span { bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5; int32 kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8; repeated KeyValue attributes = 9; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }`,
  )
  .root.lookupType('opentelemetry.proto.ExportTraceServiceRequest');

export interface ReceivedSpan {
  via: 'otlp-http-json' | 'otlp-http-protobuf' | 'otlp-grpc' | 'zipkin';
  service: string | undefined;
  name: string;
  traceId: string;
  parentId: string | undefined;
  attrs: Record<string, unknown>;
}

export interface Receiver {
  /** host:port of the HTTP receiver (OTLP/HTTP on /v1/traces, Zipkin on /api/v2/spans). */
  http: string;
  /** host:port of the OTLP/gRPC receiver. */
  grpc: string;
  spans: ReceivedSpan[];
  /** Headers (or gRPC metadata) of every export, in arrival order. */
  headers: Record<string, unknown>[];
  /** Export requests that reached the receiver, refused ones included. */
  attempts: number;
  /** Resolves once a span matching `test` has arrived (polls; fails after `ms`). */
  waitFor(test: (s: ReceivedSpan) => boolean, ms?: number): Promise<ReceivedSpan>;
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: unknown;
  doubleValue?: number;
}
interface OtlpRequest {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value?: OtlpValue }[] };
    scopeSpans?: {
      spans?: {
        traceId: unknown;
        parentSpanId?: unknown;
        name: string;
        attributes?: { key: string; value?: OtlpValue }[];
      }[];
    }[];
  }[];
}

const hex = (id: unknown) => (typeof id === 'string' ? id : Buffer.from(id as Uint8Array).toString('hex')) || undefined;

export interface ReceiverOptions {
  /** Serve HTTPS and gRPC over TLS with this key and certificate; with `ca`, clients must present a certificate it signed. */
  tls?: { key: Buffer; cert: Buffer; ca?: Buffer };
  /** Refuse each distinct export this many times (HTTP 503, gRPC UNAVAILABLE) before taking it. */
  refuse?: number;
  /** Listen for gRPC on this port (a receiver that comes back where one was). */
  grpcPort?: number;
}

export async function startReceiver(options: ReceiverOptions = {}): Promise<Receiver> {
  const spans: ReceivedSpan[] = [];
  const headers: Record<string, unknown>[] = [];
  const refusals = new Map<string, number>();
  let attempts = 0;
  /** Counts the attempt; true when this export is to be refused. */
  const refuse = (raw: Buffer) => {
    attempts++;
    const key = createHash('sha256').update(raw).digest('hex');
    const seen = refusals.get(key) ?? 0;
    refusals.set(key, seen + 1);
    return seen < (options.refuse ?? 0);
  };
  const collect = (via: ReceivedSpan['via'], o: OtlpRequest) => {
    for (const rs of o.resourceSpans ?? [])
      for (const ss of rs.scopeSpans ?? [])
        for (const s of ss.spans ?? [])
          spans.push({
            via,
            service: rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value?.stringValue,
            name: s.name,
            traceId: hex(s.traceId)!,
            parentId: hex(s.parentSpanId ?? ''),
            attrs: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, Object.values(a.value ?? {})[0]])),
          });
  };
  const decode = (buf: Buffer, h: IncomingHttpHeaders) => (h['content-encoding'] === 'gzip' ? gunzipSync(buf) : buf);

  const handle: RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      headers.push({ ...req.headers });
      const raw = Buffer.concat(chunks);
      if (refuse(raw)) {
        res.statusCode = 503;
        return res.end();
      }
      const body = decode(raw, req.headers);
      if (req.url === '/v1/traces' && String(req.headers['content-type']).includes('json')) {
        collect('otlp-http-json', JSON.parse(body.toString()) as OtlpRequest);
        res.setHeader('content-type', 'application/json');
        return res.end('{}');
      }
      if (req.url === '/v1/traces') {
        collect(
          'otlp-http-protobuf',
          Request.toObject(Request.decode(body), { longs: String, bytes: Buffer }) as OtlpRequest,
        );
        res.setHeader('content-type', 'application/x-protobuf');
        return res.end();
      }
      if (req.url === '/api/v2/spans') {
        for (const s of JSON.parse(body.toString()) as {
          localEndpoint?: { serviceName?: string };
          name: string;
          traceId: string;
          parentId?: string;
          tags?: Record<string, string>;
        }[])
          spans.push({
            via: 'zipkin',
            service: s.localEndpoint?.serviceName,
            name: s.name,
            traceId: s.traceId,
            parentId: s.parentId,
            attrs: s.tags ?? {},
          });
        res.statusCode = 202;
        return res.end();
      }
      res.statusCode = 404;
      res.end();
    });
  };
  const tls = options.tls;
  const server = tls
    ? createTlsServer(
        { key: tls.key, cert: tls.cert, ca: tls.ca, requestCert: !!tls.ca, rejectUnauthorized: !!tls.ca },
        handle,
      )
    : createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  const g = new grpc.Server();
  g.addService(
    {
      Export: {
        path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
        requestStream: false,
        responseStream: false,
        requestDeserialize: (b: Buffer) => ({
          raw: b,
          decoded: Request.toObject(Request.decode(b), { longs: String, bytes: Buffer }),
        }),
        requestSerialize: (o: object) => Buffer.from(Request.encode(o).finish()),
        responseSerialize: () => Buffer.alloc(0),
        responseDeserialize: () => ({}),
      },
    },
    {
      Export: (
        call: grpc.ServerUnaryCall<{ raw: Buffer; decoded: OtlpRequest }, object>,
        cb: grpc.sendUnaryData<object>,
      ) => {
        headers.push(call.metadata.getMap());
        if (refuse(call.request.raw))
          return cb({ code: grpc.status.UNAVAILABLE, details: 'refused by the test receiver' });
        collect('otlp-grpc', call.request.decoded);
        cb(null, {});
      },
    },
  );
  const grpcCredentials = tls
    ? grpc.ServerCredentials.createSsl(tls.ca ?? null, [{ private_key: tls.key, cert_chain: tls.cert }], !!tls.ca)
    : grpc.ServerCredentials.createInsecure();
  const grpcPort = await new Promise<number>((resolve, reject) =>
    g.bindAsync(`127.0.0.1:${options.grpcPort ?? 0}`, grpcCredentials, (e, port) => (e ? reject(e) : resolve(port))),
  );

  return {
    http: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    grpc: `127.0.0.1:${grpcPort}`,
    spans,
    headers,
    get attempts() {
      return attempts;
    },
    async waitFor(test, ms = 10_000) {
      const until = Date.now() + ms;
      for (;;) {
        const found = spans.find(test);
        if (found) return found;
        if (Date.now() > until)
          throw new Error(
            `no matching span within ${ms} ms; got: ${spans.map((s) => `${s.via} ${s.name}`).join(', ') || 'none'}`,
          );
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async close() {
      g.forceShutdown();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
