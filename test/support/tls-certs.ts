// A throwaway certificate authority for TLS tests, made with the openssl command line: a CA, a server certificate
// for `server.test` only (no IP address, so connecting to 127.0.0.1 needs the server name) and a client certificate.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const SERVER_NAME = 'server.test';

interface Pair {
  certFile: string;
  keyFile: string;
  cert: Buffer;
  key: Buffer;
}

export interface TestPki {
  caFile: string;
  ca: Buffer;
  server: Pair;
  /** A server certificate for 127.0.0.1, for clients that take no server name. */
  local: Pair;
  client: Pair;
}

export function createTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'console-pki-'));
  const at = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...ecKey,
    '-keyout',
    at('ca.key'),
    '-out',
    at('ca.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=Console Test CA',
  );
  const issue = (name: string, extensions: string): Pair => {
    writeFileSync(at(`${name}.ext`), extensions);
    openssl('req', ...ecKey, '-keyout', at(`${name}.key`), '-out', at(`${name}.csr`), '-subj', `/CN=${name}.test`);
    openssl(
      'x509',
      '-req',
      '-in',
      at(`${name}.csr`),
      '-CA',
      at('ca.crt'),
      '-CAkey',
      at('ca.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-out',
      at(`${name}.crt`),
      '-extfile',
      at(`${name}.ext`),
    );
    return {
      certFile: at(`${name}.crt`),
      keyFile: at(`${name}.key`),
      cert: readFileSync(at(`${name}.crt`)),
      key: readFileSync(at(`${name}.key`)),
    };
  };
  return {
    caFile: at('ca.crt'),
    ca: readFileSync(at('ca.crt')),
    server: issue('server', `subjectAltName=DNS:${SERVER_NAME}\nextendedKeyUsage=serverAuth\n`),
    local: issue('local', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n'),
    client: issue('client', 'extendedKeyUsage=clientAuth\n'),
  };
}
