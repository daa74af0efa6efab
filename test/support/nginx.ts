// nginx started by a test on loopback, with examples/nginx.conf as its site: the file the README offers is the
// file that is tested, only its addresses, ports, certificate and log paths changed.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The nginx binary on PATH or in /usr/sbin (Debian's), else undefined. */
export function findNginx(): string | undefined {
  for (const candidate of ['nginx', '/usr/sbin/nginx']) if (!spawnSync(candidate, ['-v']).error) return candidate;
  return undefined;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface Site {
  /** Port nginx listens on (TLS). */
  port: number;
  /** Port of the Console behind it. */
  upstream: number;
  certFile: string;
  keyFile: string;
}

const EXAMPLE = new URL('../../examples/nginx.conf', import.meta.url);

/** examples/nginx.conf for one site: `name` keeps the upstreams of several sites in one nginx apart. */
export function siteConfig(site: Site, name: string, logFile: string): string {
  const replace = (text: string, from: string, to: string) => {
    if (!text.includes(from)) throw new Error(`examples/nginx.conf no longer holds "${from}"`);
    return text.replaceAll(from, to);
  };
  let text = readFileSync(EXAMPLE, 'utf8');
  text = replace(text, 'upstream console {', `upstream ${name} {`);
  text = replace(text, 'http://console/', `http://${name}/`);
  text = replace(text, 'server 127.0.0.1:8080;', `server 127.0.0.1:${site.upstream};`);
  text = replace(text, 'listen 443 ssl;', `listen 127.0.0.1:${site.port} ssl;`);
  text = replace(text, '/etc/ssl/certs/console.example.com.pem', site.certFile);
  text = replace(text, '/etc/ssl/private/console.example.com.key', site.keyFile);
  text = replace(text, '/var/log/nginx/console.access.log', logFile);
  // log_format is defined once per nginx.
  return name === 'console' ? text : text.replace(/^log_format [^;]*;$/m, '');
}

export interface Nginx {
  accessLog(): string;
  stop(): Promise<void>;
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

/** Starts nginx in the foreground with the sites (the first named `console`, as in the example). */
export async function startNginx(binary: string, sites: Site[]): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), 'console-nginx-'));
  for (const temp of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, temp));
  const logFile = join(dir, 'access.log');
  const includes = sites.map((site, i) => {
    const file = join(dir, `site${i}.conf`);
    writeFileSync(file, siteConfig(site, i === 0 ? 'console' : `console${i}`, logFile));
    return `include ${file};`;
  });
  writeFileSync(
    join(dir, 'nginx.conf'),
    [
      // As root, workers would drop to nobody, who cannot enter the test's private folder.
      process.getuid?.() === 0 ? 'user root;' : '',
      'worker_processes 1;',
      `pid ${join(dir, 'nginx.pid')};`,
      `error_log ${join(dir, 'error.log')} warn;`,
      'events { worker_connections 256; }',
      'http {',
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
        (t) => `  ${t}_temp_path ${join(dir, t === 'client_body' ? 'body' : t)};`,
      ),
      ...includes.map((line) => `  ${line}`),
      '}',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(binary, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const deadline = Date.now() + 10_000;
  while (!(await Promise.all(sites.map((s) => listening(s.port)))).every(Boolean)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      const log = existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : '';
      throw new Error(`nginx did not start: ${stderr}${log}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    accessLog: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
    async stop() {
      // QUIT: finish the requests under way, then exit (what systemd's reload-or-stop does).
      child.kill('SIGQUIT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
