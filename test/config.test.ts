import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../server/config/load.ts';
import { SOURCE_CLI } from './support/source-cli.ts';

const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'console-config-'));
  dirs.push(dir);
  return dir;
}

function yamlFile(text: string): string {
  const path = join(tempDir(), 'console.yaml');
  writeFileSync(path, text);
  return path;
}

/** Loads with no ambient environment, so the machine's variables never leak into a case. */
const load = (options: Parameters<typeof loadConfig>[0] = {}) => loadConfig({ env: {}, ...options });

/** The one-line message of a failed load. */
function failure(options: Parameters<typeof loadConfig>[0]): string {
  try {
    load(options);
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    assert.doesNotMatch(error.message, /\n/, 'the message is one line');
    return error.message;
  }
  assert.fail('the configuration was accepted');
}

describe('config: defaults and sources', () => {
  test('defaults are the documented values', () => {
    const c = load();
    assert.equal(c.server.host, '0.0.0.0');
    assert.equal(c.server.port, 8080);
    assert.equal(c.server.mode, 'release');
    assert.equal(c.server.read_timeout, 10_000);
    assert.equal(c.server.write_timeout, 10_000);
    assert.equal(c.server.shutdown_timeout, 10_000);
    assert.equal(c.server.file_upload_path, './uploads');
    assert.equal(c.server.max_upload_size, 10_485_760);
    assert.equal(c.server.trust_proxy, false);
    assert.deepEqual(c.server.cors_origins, ['*']);
    assert.equal(c.database.driver, 'sqlite');
    assert.equal(c.database.path, 'console.db');
    assert.equal(c.database.table_prefix, 't_');
    assert.equal(c.database.slow_threshold, 3_000);
    assert.equal(c.cache.size, 1000);
    assert.equal(c.jwt.secret, undefined);
    assert.equal(c.jwt.expiration, 24 * 3_600_000);
    assert.deepEqual(c.log, { level: 'info', format: 'json', path: 'logs', access: true, access_probes: false });
    assert.equal(c.bootstrap.admin_username, 'admin');
    assert.equal(c.rate_limit.enabled, true);
    assert.equal(c.rate_limit.login_per_minute, 10);
    assert.equal(c.rate_limit.global_per_minute, 1200);
    assert.equal(c.task.lease_ttl, 30_000);
    assert.equal(c.oauth.enabled, false);
    assert.deepEqual(c.oauth.providers, []);
    assert.equal(c.tracing.service_name, 'console');
  });

  test('a YAML file given with --config is read', () => {
    const file = yamlFile('server:\n  port: 9191\n  read_timeout: 1m30s\nlog:\n  level: debug\n');
    const c = load({ argv: ['--config', file] });
    assert.equal(c.server.port, 9191);
    assert.equal(c.server.read_timeout, 90_000);
    assert.equal(c.log.level, 'debug');
  });

  test('./config.yaml in the working folder is read when no file is named', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'config.yaml'), 'server:\n  port: 9292\n');
    const previous = process.cwd();
    process.chdir(dir);
    try {
      assert.equal(load().server.port, 9292);
      // A named file replaces it rather than merging with it.
      assert.equal(load({ argv: ['--config', yamlFile('log:\n  level: warn\n')] }).server.port, 8080);
    } finally {
      process.chdir(previous);
    }
  });

  test('a named file that does not exist is an error; a missing ./config.yaml is not', () => {
    assert.match(failure({ argv: ['--config', join(tempDir(), 'absent.yaml')] }), /absent\.yaml/);
    const previous = process.cwd();
    process.chdir(tempDir());
    try {
      assert.equal(load().server.port, 8080);
    } finally {
      process.chdir(previous);
    }
  });

  test('precedence for one key: flags > environment > file > defaults', () => {
    const file = yamlFile('server:\n  port: 1111\n');
    const env = { SERVER_PORT: '2222' };
    const argv = ['--config', file, '--server.port', '3333'];
    assert.equal(load({ argv, env }).server.port, 3333);
    assert.equal(load({ argv: ['--config', file], env }).server.port, 2222);
    assert.equal(load({ argv: ['--config', file] }).server.port, 1111);
    assert.equal(load().server.port, 8080);
    assert.equal(load({ argv: ['--server.port=4444'], env }).server.port, 4444, '--key=value form');
  });

  test('values given in code rank with the file: above it, below the environment', () => {
    const file = yamlFile('server:\n  port: 1111\n  host: 10.0.0.1\n');
    const c = load({ configFile: file, config: { server: { port: 5555 } } });
    assert.equal(c.server.port, 5555);
    assert.equal(c.server.host, '10.0.0.1', 'keys the code does not give still come from the file');
    assert.equal(
      load({ configFile: file, config: { server: { port: 5555 } }, env: { SERVER_PORT: '2222' } }).server.port,
      2222,
    );
  });

  test('environment names of keys that contain underscores', () => {
    const key = 'k'.repeat(32);
    const c = load({
      env: {
        SERVER_FILE_UPLOAD_PATH: '/srv/uploads',
        SERVER_MAX_UPLOAD_SIZE: '2048',
        DATABASE_DRIVER: 'mysql',
        DATABASE_MAX_OPEN_CONNECTIONS: '7',
        DATABASE_MAX_CONNECTION_LIFE_TIME: '2m',
        DATABASE_TABLE_PREFIX: 'app_',
        GLOBAL_ENCRYPT_KEY: key,
        BOOTSTRAP_ADMIN_PASSWORD: 'from-env-1',
        RATE_LIMIT_LOGIN_PER_MINUTE: '3',
        TRACING_GRPC_ENDPOINT: 'collector:4317',
        TRACING_GRPC_RECONNECTION_PERIOD: '15s',
      },
    });
    assert.equal(c.server.file_upload_path, '/srv/uploads');
    assert.equal(c.server.max_upload_size, 2048);
    assert.equal(c.database.max_open_connections, 7);
    assert.equal(c.database.max_connection_life_time, 120_000);
    assert.equal(c.database.table_prefix, 'app_');
    assert.equal(c.global.encrypt_key, key);
    assert.equal(c.bootstrap.admin_password, 'from-env-1');
    assert.equal(c.rate_limit.login_per_minute, 3);
    assert.equal(c.tracing.grpc?.reconnection_period, 15_000);
  });

  test('variables that are not config keys are ignored', () => {
    assert.equal(load({ env: { SERVER: '{"port":1}', SERVER_PORTS: '1', PATH: '/bin' } }).server.port, 8080);
  });

  test('lists and maps in a variable are JSON', () => {
    const provider = {
      name: 'gitlab',
      client_id: 'id',
      client_secret: 'secret',
      auth_url: 'https://gitlab.example/oauth/authorize',
      token_url: 'https://gitlab.example/oauth/token',
      user_info_url: 'https://gitlab.example/api/v4/user',
      redirect_url: 'https://console.example/api/auth/oauth/gitlab/callback',
    };
    const c = load({
      env: {
        OAUTH_ENABLED: 'true',
        OAUTH_PROVIDERS: JSON.stringify([provider]),
        TRACING_HTTP_ENDPOINT: 'collector:4318',
        TRACING_HTTP_HEADER: '{"x-api-key":"abc","x-tenant":"t1"}',
        TRACING_HTTP_RETRY: '{"enabled":false,"initial_interval":"2s"}',
        SERVER_CORS_ORIGINS: '["https://a.example","https://b.example"]',
      },
    });
    assert.equal(c.oauth.enabled, true);
    assert.equal(c.oauth.providers.length, 1);
    assert.equal(c.oauth.providers[0]!.name, 'gitlab');
    assert.equal(c.oauth.providers[0]!.email_field, 'email', 'provider defaults apply');
    assert.equal(c.oauth.providers[0]!.auto_create_user, false);
    assert.deepEqual(c.tracing.http?.header, { 'x-api-key': 'abc', 'x-tenant': 't1' });
    assert.equal(c.tracing.http?.retry.enabled, false);
    assert.equal(c.tracing.http?.retry.initial_interval, 2_000);
    assert.equal(c.tracing.http?.retry.max_interval, 30_000, 'unnamed retry keys keep their defaults');
    assert.deepEqual(c.server.cors_origins, ['https://a.example', 'https://b.example']);
    assert.match(failure({ env: { OAUTH_PROVIDERS: '[{name:' } }), /oauth\.providers.*OAUTH_PROVIDERS/);
  });

  test('retry: default enabled; a string "false" or false disables it', () => {
    assert.deepEqual(load({ env: { TRACING_HTTP_ENDPOINT: 'c:4318' } }).tracing.http?.retry, {
      enabled: true,
      initial_interval: 5_000,
      max_interval: 30_000,
      max_elapsed_time: 60_000,
    });
    assert.equal(
      load({ env: { TRACING_HTTP_ENDPOINT: 'c:4318', TRACING_HTTP_RETRY: 'false' } }).tracing.http?.retry.enabled,
      false,
    );
    assert.equal(
      load({ env: { TRACING_GRPC_ENDPOINT: 'c:4317', TRACING_GRPC_RETRY_ENABLED: 'false' } }).tracing.grpc?.retry
        .enabled,
      false,
    );
    const file = yamlFile(
      'tracing:\n  http:\n    endpoint: c:4318\n    retry:\n      enabled: "false"\n      max_elapsed_time: 2m\n',
    );
    const retry = load({ configFile: file }).tracing.http?.retry;
    assert.equal(retry?.enabled, false);
    assert.equal(retry?.max_elapsed_time, 120_000);
  });

  test('a comma-separated or YAML list of CORS origins', () => {
    assert.deepEqual(
      load({ env: { SERVER_CORS_ORIGINS: 'https://a.example, https://b.example' } }).server.cors_origins,
      ['https://a.example', 'https://b.example'],
    );
    const file = yamlFile('server:\n  cors_origins:\n    - https://a.example\n');
    assert.deepEqual(load({ configFile: file }).server.cors_origins, ['https://a.example']);
  });

  test('Go-style durations', () => {
    const c = load({
      env: {
        SERVER_READ_TIMEOUT: '1m30s',
        SERVER_WRITE_TIMEOUT: '500ms',
        JWT_EXPIRATION: '24h',
        SERVER_SHUTDOWN_TIMEOUT: '1h2m3s',
      },
    });
    assert.equal(c.server.read_timeout, 90_000);
    assert.equal(c.server.write_timeout, 500);
    assert.equal(c.jwt.expiration, 86_400_000);
    assert.equal(c.server.shutdown_timeout, 3_723_000);
    for (const bad of ['10', '10 seconds', 'soon', '-5s', '1d']) {
      const message = failure({ env: { SERVER_READ_TIMEOUT: bad } });
      assert.match(message, /server\.read_timeout/);
      assert.match(message, /duration/);
    }
  });

  test('per-driver defaults: postgres 5432, mysql 3306, clickhouse 8123 (HTTP); an explicit port wins', () => {
    const ch = load({ env: { DATABASE_DRIVER: 'clickhouse' } }).database;
    assert.deepEqual([ch.port, ch.max_open_connections, ch.max_idle_connections], [8123, 100, 2]);
    assert.equal(load({ env: { DATABASE_DRIVER: 'postgres' } }).database.port, 5432);
    assert.equal(load({ env: { DATABASE_DRIVER: 'postgres' } }).database.max_open_connections, 100);
    assert.equal(load({ env: { DATABASE_DRIVER: 'mysql' } }).database.port, 3306);
    assert.equal(load({ env: { DATABASE_DRIVER: 'mysql' } }).database.max_idle_connections, 10);
    assert.equal(load({ env: { DATABASE_DRIVER: 'mysql' } }).database.charset, 'utf8mb4');
    assert.equal(load({ env: { DATABASE_DRIVER: 'mysql', DATABASE_PORT: '13306' } }).database.port, 13306);
  });

  test('compression values', () => {
    const compression = (value: unknown) =>
      load({ config: { tracing: { grpc: { endpoint: 'c:4317', compression: value as never } } } }).tracing.grpc
        ?.compression;
    for (const on of [true, 'true', 1, '1', 'gzip'])
      assert.equal(compression(on), 'gzip', `compression ${JSON.stringify(on)}`);
    for (const off of [false, 'false', 0, '0'])
      assert.equal(compression(off), 'none', `compression ${JSON.stringify(off)}`);
    assert.equal(load({ env: { TRACING_HTTP_ENDPOINT: 'c:4318' } }).tracing.http?.compression, 'none', 'default none');
    assert.equal(
      load({ env: { TRACING_HTTP_ENDPOINT: 'c:4318', TRACING_HTTP_COMPRESSION: 'gzip' } }).tracing.http?.compression,
      'gzip',
    );
    assert.match(
      failure({ env: { TRACING_HTTP_ENDPOINT: 'c:4318', TRACING_HTTP_COMPRESSION: 'zstd' } }),
      /tracing\.http\.compression.*gzip/,
    );
  });

  test('global.encrypt_key: 32 characters, 64 hex digits or base64 of 32 bytes', () => {
    for (const ok of ['x'.repeat(32), 'ab'.repeat(32), Buffer.alloc(32, 7).toString('base64')])
      assert.equal(load({ env: { GLOBAL_ENCRYPT_KEY: ok } }).global.encrypt_key, ok);
    assert.match(failure({ env: { GLOBAL_ENCRYPT_KEY: 'too-short' } }), /global\.encrypt_key.*32/);
  });
});

describe('config: mistakes are one line naming the key', () => {
  test('two tracing exporters: the error names both', () => {
    const message = failure({
      env: { TRACING_HTTP_ENDPOINT: 'c:4318', TRACING_ZIPKIN_ENDPOINT: 'http://zipkin:9411/api/v2/spans' },
    });
    assert.match(message, /http/);
    assert.match(message, /zipkin/);
  });

  test('tracing.grpc.service_config must hold a JSON object', () => {
    assert.match(
      failure({ env: { TRACING_GRPC_ENDPOINT: 'c:4317', TRACING_GRPC_SERVICE_CONFIG: 'retry please' } }),
      /tracing\.grpc\.service_config.*JSON object/,
    );
    assert.match(
      failure({ env: { TRACING_GRPC_ENDPOINT: 'c:4317', TRACING_GRPC_SERVICE_CONFIG: '[1]' } }),
      /tracing\.grpc\.service_config/,
    );
    assert.equal(
      load({ env: { TRACING_GRPC_ENDPOINT: 'c:4317', TRACING_GRPC_SERVICE_CONFIG: '{"methodConfig":[]}' } }).tracing
        .grpc?.service_config,
      '{"methodConfig":[]}',
    );
  });

  test('an unknown key in the file is named', () => {
    assert.match(failure({ configFile: yamlFile('server:\n  prot: 8080\n') }), /server\.prot/);
    assert.match(failure({ configFile: yamlFile('sever:\n  port: 8080\n') }), /sever/);
  });

  test('an unknown flag is named', () => {
    assert.match(failure({ argv: ['--server.prot', '1'] }), /--server\.prot/);
  });

  const cases: [string, string, RegExp][] = [
    ['server:\n  port: abc\n', 'server.port', /whole number from 0 to 65535/],
    ['server:\n  port: 70000\n', 'server.port', /whole number from 0 to 65535/],
    ['server:\n  port: 1.5\n', 'server.port', /whole number/],
    ['database:\n  driver: oracle\n', 'database.driver', /sqlite.*postgres.*mysql/],
    ['log:\n  level: loud\n', 'log.level', /debug.*info.*warn.*error/],
    ['log:\n  format: xml\n', 'log.format', /json.*logfmt/],
    ['server:\n  mode: fast\n', 'server.mode', /debug.*release/],
    ['rate_limit:\n  enabled: maybe\n', 'rate_limit.enabled', /true or false/],
    ['server:\n  write_timeout: forever\n', 'server.write_timeout', /duration/],
    ['oauth:\n  providers: github\n', 'oauth.providers', /list/],
    ['task:\n  lease_abort_at: 1.5\n', 'task.lease_abort_at', /between 0 and 1/],
    ['task:\n  lease_abort_at: soon\n', 'task.lease_abort_at', /between 0 and 1/],
    ['task:\n  lease_ttl: 4s\n  lease_renew_interval: 3s\n', 'task.lease_renew_interval', /lease_ttl × lease_abort_at/],
  ];
  for (const [yaml, key, allowed] of cases) {
    test(`${yaml.trim().replace(/\n\s*/g, ' ')} → names ${key} and what is allowed`, () => {
      const message = failure({ configFile: yamlFile(yaml) });
      assert.ok(message.includes(key), message);
      assert.match(message, allowed);
      assert.doesNotMatch(message, /NaN|received|Invalid input/, `zod's own wording leaks: ${message}`);
    });
  }

  test('a blank or fractional number in a variable is refused, not read as 0', () => {
    assert.match(failure({ env: { SERVER_PORT: ' ' } }), /server\.port/);
    assert.match(failure({ argv: ['--server.port', ''] }), /server\.port/);
    assert.match(
      failure({ env: { DATABASE_MAX_OPEN_CONNECTIONS: 'seven' } }),
      /database\.max_open_connections.*whole number/,
    );
  });

  test('clickhouse is single node: several hosts are refused in one line naming database.host', () => {
    for (const host of ['ch1,ch2', 'ch1 ch2', 'ch1;ch2']) {
      assert.match(
        failure({ env: { DATABASE_DRIVER: 'clickhouse', DATABASE_HOST: host } }),
        /^config: database\.host: the clickhouse driver is single node/,
      );
    }
    assert.equal(
      load({ env: { DATABASE_DRIVER: 'postgres', DATABASE_HOST: 'a,b' } }).database.host,
      'a,b',
      'other drivers judge their host themselves',
    );
  });

  test('a refused secret is named but never repeated', () => {
    const jwt = failure({ env: { JWT_SECRET: 'hunter2-short' } });
    assert.match(jwt, /^config: jwt\.secret: /);
    assert.doesNotMatch(jwt, /hunter2/);
    const key = failure({ env: { GLOBAL_ENCRYPT_KEY: 'not-a-key-hunter2' } });
    assert.match(key, /^config: global\.encrypt_key: /);
    assert.doesNotMatch(key, /hunter2/);
    assert.match(failure({ env: { SERVER_PORT: 'abc' } }), /\(got "abc"\)/, 'other values are shown');
  });

  test('server.port 0 (any free port) is allowed', () => {
    assert.equal(load({ argv: ['--server.port', '0'] }).server.port, 0);
  });

  test('the CLI prints exactly one line naming the key and exits 1', () => {
    const cwd = tempDir();
    const run = spawnSync(process.execPath, [...SOURCE_CLI, 'serve', '--server.port', 'abc'], {
      cwd,
      env: { PATH: process.env.PATH },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(run.status, 1, run.stderr);
    const lines = run.stderr.split('\n').filter((l) => l.trim() !== '');
    assert.equal(lines.length, 1, run.stderr);
    assert.match(lines[0]!, /server\.port/);
    assert.match(lines[0]!, /whole number/);
    assert.equal(run.stdout, '');
  });
});
