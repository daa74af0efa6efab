import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { PermanentExportError } from './retry.ts';
import { readTlsFiles, type HttpBlock, type TlsConfig, type Transport } from './otlp.ts';

const gzipped = promisify(gzip);

/** Node's TLS options for `tls_config`; `server_name` is both what is sent (SNI) and what the certificate must name. */
function tlsOptions(tls: TlsConfig | undefined) {
  if (!tls) return {};
  return {
    ...readTlsFiles(tls, 'http'),
    servername: tls.server_name,
    rejectUnauthorized: !tls.insecure_skip_verify,
  };
}

/** Endpoints are host:port (README, `tracing.http.*`); a full URL is accepted as given. */
function baseUrl(endpoint: string, insecure: boolean): string {
  return /^[a-z]+:\/\//i.test(endpoint) ? endpoint.replace(/\/+$/, '') : `${insecure ? 'http' : 'https'}://${endpoint}`;
}

/** What OTLP/HTTP says to retry: throttling, a gateway that is down, and (below) no answer at all. */
const RETRYABLE_STATUS = new Set([429, 502, 503, 504]);

/** POSTs each batch to `<endpoint><url_path>`, protobuf or JSON, gzip when configured, within `timeout`. */
export function httpTransport(h: HttpBlock, json: boolean): Transport {
  const url = new URL(baseUrl(h.endpoint, h.insecure) + (h.url_path.startsWith('/') ? h.url_path : `/${h.url_path}`));
  const secure = url.protocol === 'https:';
  const agent = secure
    ? new HttpsAgent({ keepAlive: true, ...tlsOptions(h.tls_config) })
    : new HttpAgent({ keepAlive: true });
  const request = secure ? httpsRequest : httpRequest;
  const gzipOn = h.compression === 'gzip';
  const headers = {
    ...h.header,
    'content-type': json ? 'application/json' : 'application/x-protobuf',
    ...(gzipOn ? { 'content-encoding': 'gzip' } : {}),
  };
  return {
    async send(body) {
      const payload = gzipOn ? await gzipped(body) : body;
      await new Promise<void>((resolve, reject) => {
        const req = request(
          url,
          {
            method: 'POST',
            agent,
            headers: { ...headers, 'content-length': payload.length },
            signal: AbortSignal.timeout(h.timeout),
          },
          (res) => {
            res.resume();
            res.on('error', reject);
            res.on('end', () => {
              const status = res.statusCode ?? 0;
              if (status < 300) return resolve();
              const error = `${url.href} answered ${status}`;
              reject(RETRYABLE_STATUS.has(status) ? new Error(error) : new PermanentExportError(error));
            });
          },
        );
        req.on('error', reject);
        req.end(payload);
      });
    },
    close: () => agent.destroy(),
  };
}
