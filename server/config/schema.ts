import { z } from 'zod';
import { signingKeyFrom } from '../../lib/audit-checkpoint.ts';
import { parseDuration } from '../../lib/duration.ts';

function signsCheckpoints(key: string): boolean {
  try {
    signingKeyFrom(key);
    return true;
  } catch {
    return false;
  }
}

// Durations are Go-style strings in files and variables (`10s`, `1m30s`); the parsed config holds milliseconds.
const duration = (fallback: string) =>
  z
    .union([z.string(), z.number()])
    .default(fallback)
    .transform((v, ctx) => {
      const ms = typeof v === 'number' ? v : parseDuration(v);
      if (ms === undefined || ms < 0) {
        ctx.addIssue({ code: 'custom', message: 'must be a duration such as 500ms, 10s, 1m30s or 24h' });
        return z.NEVER;
      }
      return ms;
    });

// Env variables and flags arrive as strings; numbers and booleans are read from them here. Only digits count
// as a number: z.coerce would read a blank variable as 0 (port 0 = a random port).
const wholeNumber = (min: number, max: number) => {
  const allowed =
    max === Number.MAX_SAFE_INTEGER
      ? `must be a whole number of at least ${min}`
      : `must be a whole number from ${min} to ${max}`;
  return z.preprocess(
    (v) => (typeof v === 'string' && /^\s*-?\d+\s*$/.test(v) ? Number(v) : v),
    z.number({ error: allowed }).int(allowed).min(min, allowed).max(max, allowed),
  );
};
const int = (fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) => wholeNumber(min, max).default(fallback);
const optInt = (min = 0, max = Number.MAX_SAFE_INTEGER) => wholeNumber(min, max).optional();
const bool = (fallback: boolean) =>
  z
    .union([z.boolean(), z.enum(['true', 'false', '1', '0'])], { error: 'must be true or false' })
    .default(fallback)
    .transform((v) => v === true || v === 'true' || v === '1');

const tlsConfig = z
  .object({
    cert_file: z.string().optional().describe('client certificate, for receivers that require one'),
    key_file: z.string().optional().describe("the client certificate's private key"),
    ca_file: z.string().optional().describe("CA that signed the receiver's certificate, instead of the system's CAs"),
    server_name: z.string().optional().describe("name the receiver's certificate must carry"),
    insecure_skip_verify: bool(false).describe('accept any certificate (testing only)'),
  })
  .strict();

/** A string holding JSON becomes its value; any other string stays as it is, for the schema to judge. */
function jsonOrText(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

// The documented contract: retry is an object or a string; a string holds the object as JSON, or just true/false for `enabled`.
const retry = z.preprocess(
  (v) => {
    const value = jsonOrText(v);
    return typeof value === 'boolean' ? { enabled: value } : value;
  },
  z
    .object({
      enabled: bool(true).describe('send a failed batch again'),
      initial_interval: duration('5s').describe('first wait before sending again'),
      max_interval: duration('30s').describe('longest wait between attempts'),
      max_elapsed_time: duration('1m').describe('give a batch up after this long'),
    })
    .strict(),
);

/** `global.encrypt_key` as 32 key bytes: 64 hex digits, base64 of 32 bytes, or 32 characters taken as they are. */
export function encryptKeyBytes(text: string): Buffer | undefined {
  if (/^[0-9a-f]{64}$/i.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/]{43}=$/.test(text)) return Buffer.from(text, 'base64');
  const raw = Buffer.from(text, 'utf8');
  return raw.length === 32 ? raw : undefined;
}

/** `*`, or the allowed origins: a list (JSON in a variable or flag) or a comma-separated string. */
const corsOrigins = z
  .preprocess(
    (v) => (typeof v === 'string' && v.trim().startsWith('[') ? jsonOrText(v) : v),
    z.union([z.string(), z.array(z.string())], { error: 'must be * or a list of origins' }),
  )
  .default('*')
  .transform((v) => (Array.isArray(v) ? v : v.split(',')).map((o) => o.trim()).filter(Boolean));

const compression = z
  .union([z.boolean(), z.number(), z.string()])
  .default(false)
  .transform((v, ctx) => {
    const s = String(v).toLowerCase();
    if (['true', '1', 'gzip'].includes(s)) return 'gzip' as const;
    if (['false', '0', 'none', ''].includes(s)) return 'none' as const;
    ctx.addIssue({ code: 'custom', message: 'must be true, "true", 1, "1", "gzip", false, "false", 0 or "0"' });
    return z.NEVER;
  })
  .describe('gzip the export bodies: gzip/true or none/false');

const oauthProvider = z
  .object({
    name: z
      .string()
      .regex(/^[a-z0-9_-]+$/i, 'must be letters, digits, _ or -')
      .describe('identifier in its URLs: letters, digits, _ or -'),
    display_name: z.string().optional().describe('name on the login button'),
    client_id: z.string().describe('client id registered with the provider'),
    client_secret: z.string().describe('client secret registered with the provider'),
    icon_url: z.string().optional().describe('icon on the login button: an https: address or a path on this service'),
    // An OpenID provider's issuer: its endpoints and keys come from <issuer>/.well-known/openid-configuration.
    issuer: z.url().optional().describe('OpenID issuer: endpoints and keys by discovery'),
    auth_url: z.url().optional().describe('authorization endpoint (required without issuer)'),
    token_url: z.url().optional().describe('token endpoint (required without issuer)'),
    user_info_url: z.url().optional().describe('user info endpoint (required without issuer)'),
    redirect_url: z
      .url()
      .optional()
      .describe('callback address; default server.root_url + /api/auth/oauth/<name>/callback'),
    scopes: z.string().default('openid profile email').describe('scopes asked for, space-separated'),
    // RFC 6749 §2.3.1: every server must accept HTTP Basic; some only take the secret in the body.
    token_auth_method: z
      .enum(['client_secret_basic', 'client_secret_post'])
      .default('client_secret_basic')
      .describe('how the client secret is sent: client_secret_basic or client_secret_post'),
    role_field: z.string().optional().describe('user info field naming the role of a created user'),
    email_field: z.string().default('email').describe('user info field holding the email address'),
    username_field: z.string().default('username').describe('user info field holding the username'),
    full_name_field: z.string().default('fullName').describe('user info field holding the full name'),
    avatar_field: z.string().default('avatar').describe('user info field holding the avatar URL'),
    auto_create_user: bool(false).describe('create a user on a first login nobody is linked to'),
  })
  .strict()
  .superRefine((p, ctx) => {
    // Explicit addresses win over discovered ones; without an issuer there is nothing to discover.
    if (p.issuer) return;
    for (const key of ['auth_url', 'token_url', 'user_info_url'] as const) {
      if (!p[key]) ctx.addIssue({ code: 'custom', path: [key], message: 'is required when issuer is not set' });
    }
  });

export const DRIVERS = ['sqlite', 'postgres', 'mysql', 'clickhouse'] as const;

export const configSchema = z
  .object({
    global: z
      .object({
        encrypt_key: z
          .string()
          .refine(
            (k) => encryptKeyBytes(k) !== undefined,
            'must be 32 bytes: 32 characters, 64 hex digits or base64 of 32 bytes',
          )
          .optional()
          .describe('32-byte key sealing stored secrets; without it SQLite generates console.key beside the database'),
      })
      .strict()
      .prefault({}),
    server: z
      .object({
        host: z.string().default('0.0.0.0').describe('listen address'),
        port: int(8080, 0, 65535).describe('listen port (0 picks a free one)'),
        mode: z.enum(['debug', 'release']).default('release').describe('release, or debug for human-readable logs'),
        root_url: z
          .string()
          .default('')
          .describe('public URL behind a reverse proxy, for links and the OpenAPI server URL'),
        read_timeout: duration('10s').describe('time allowed to receive a whole request'),
        write_timeout: duration('10s').describe('a request not answered within this gets 503 E5031'),
        shutdown_timeout: duration('10s').describe('on SIGTERM/SIGINT, time for requests and running tasks to finish'),
        file_upload_path: z
          .string()
          .default('./uploads')
          .describe('task artifacts and file-backend logs (shared storage with several nodes)'),
        max_upload_size: int(10_485_760, 1).describe('largest request body in bytes'),
        max_connections: int(1024, 1).describe('connections open at once; more are closed unanswered until one ends'),
        geoip_db_path: z
          .string()
          .default('')
          .describe('MaxMind .mmdb file adding country and city to login audit records'),
        trust_proxy: bool(false).describe('take the client IP from X-Forwarded-For'),
        cors_origins: corsOrigins.describe('allowed CORS origins: *, a list, or comma-separated'),
      })
      .strict()
      .prefault({}),
    database: z
      .object({
        driver: z.enum(DRIVERS).default('sqlite').describe('sqlite, postgres, mysql or clickhouse (single node)'),
        table_prefix: z
          .string()
          .regex(/^[A-Za-z0-9_]*$/, 'must be letters, digits and _')
          .default('t_')
          .describe('prefix of every table'),
        slow_threshold: duration('3s').describe('queries slower than this are logged (SQL text, never the values)'),
        path: z.string().default('console.db').describe('SQLite file'),
        host: z
          .string()
          .default('127.0.0.1')
          .describe('PostgreSQL, MySQL or ClickHouse host (one host; https://host for ClickHouse over TLS)'),
        port: optInt(1, 65535).describe('server port'),
        username: z.string().default('').describe('PostgreSQL, MySQL or ClickHouse user'),
        password: z.string().default('').describe('its password'),
        schema: z.string().default('console').describe('the database name; it must exist'),
        charset: z.string().default('utf8mb4').describe('MySQL connection and table character set'),
        collation: z.string().default('utf8mb4_unicode_ci').describe('MySQL collation'),
        max_open_connections: optInt(1).describe('pool size (SQLite always uses one connection)'),
        max_idle_connections: optInt(0).describe('connections kept open while idle'),
        max_connection_life_time: duration('30s').describe('idle connections older than this are closed'),
        read_timeout: duration('10s').describe('ClickHouse: a statement whose answer takes longer fails'),
        dial_timeout: duration('10s').describe('a connection not established within this fails'),
        idle_transaction_timeout: duration('10s').describe(
          'PostgreSQL, MariaDB: the server ends a session whose transaction waits longer for its next statement (a node cut off mid-transaction), freeing its locks',
        ),
        lock_timeout: duration('15s').describe(
          'PostgreSQL, MySQL: a statement waiting longer for a row lock fails and runs again (keep it above idle_transaction_timeout)',
        ),
        max_execution_time: duration('60s').describe('ClickHouse: the server stops a statement running longer'),
        enable_compression: bool(true).describe('ClickHouse: gzip request and response bodies'),
      })
      .strict()
      .superRefine((d, ctx) => {
        // Several hosts are a ClickHouse cluster (replicas, shards); the driver is single node, single process.
        if (d.driver === 'clickhouse' && /[,;\s]/.test(d.host.trim()))
          ctx.addIssue({
            code: 'custom',
            path: ['host'],
            message: 'the clickhouse driver is single node: give one host, not a cluster',
          });
      })
      .prefault({}),
    cache: z
      .object({ size: int(1000, 0).describe('bound of every in-process cache') })
      .strict()
      .prefault({}),
    jwt: z
      .object({
        secret: z
          .string()
          .min(16, 'must be at least 16 characters')
          .optional()
          .describe('HS256 signing secret (16+ characters); generated once and stored in the database when absent'),
        expiration: duration('24h').describe('token lifetime'),
      })
      .strict()
      .prefault({}),
    audit: z
      .object({
        signing_key: z
          .string()
          .refine(signsCheckpoints, 'must be an Ed25519 private key: PEM, or base64 of its PKCS#8 form')
          .optional()
          .describe(
            'Ed25519 private key signing audit checkpoints (PEM or base64 PKCS#8); generated once, sealed and stored in the database when absent',
          ),
        checkpoint_path: z
          .string()
          .default('')
          .describe(
            'also append each signed audit checkpoint to this file (one JSON line each); empty: only the database',
          ),
        checkpoint_interval: duration('1m').describe(
          'how often a checkpoint is signed while audit records are added; 0 signs only at shutdown',
        ),
      })
      .strict()
      .prefault({}),
    log: z
      .object({
        level: z.enum(['debug', 'info', 'warn', 'error']).default('info').describe('debug, info, warn or error'),
        format: z.enum(['json', 'logfmt']).default('json').describe('json or logfmt'),
        path: z.string().default('logs').describe('also write <path>/console.log; empty writes no file'),
        access: bool(true).describe('log every answered request at info (route pattern, status, time, bytes, user)'),
        access_probes: bool(false).describe('log /healthz and /readyz requests too'),
      })
      .strict()
      .prefault({}),
    bootstrap: z
      .object({
        admin_username: z.string().default('admin').describe('administrator created on an empty database'),
        admin_password: z.string().optional().describe('its password; when absent a random one is printed once'),
        admin_email: z.string().default('admin@example.com').describe('its email'),
      })
      .strict()
      .prefault({}),
    security: z
      .object({
        // scrypt cost N (a power of two). Lower it only in tests; 2^15 takes ~60 ms here.
        scrypt_cost: int(32768, 2, 1 << 20)
          .refine((n) => (n & (n - 1)) === 0, 'must be a power of two')
          .describe('scrypt N for password hashes (a power of two)'),
      })
      .strict()
      .prefault({}),
    rate_limit: z
      .object({
        enabled: bool(true).describe('per-node rate limits on /api and /trpc (429 E4291 over the limit)'),
        login_per_minute: int(10, 1).describe('logins per client network and account per minute'),
        global_per_minute: int(1200, 1).describe('requests per user (or client IP) per minute'),
      })
      .strict()
      .prefault({}),
    metrics: z
      .object({ token: z.string().default('').describe('when set, /metrics requires Authorization: Bearer <token>') })
      .strict()
      .prefault({}),
    task: z
      .object({
        lease_ttl: duration('30s').describe('how long a task claim holds without renewal'),
        lease_renew_interval: duration('10s').describe('how often a node renews the claims of its running tasks'),
        lease_abort_at: z.coerce
          .number({ error: 'must be a number between 0 and 1' })
          .gt(0, 'must be a number between 0 and 1')
          .lt(1, 'must be a number between 0 and 1')
          .default(0.75)
          .describe(
            'fraction of lease_ttl after its last renewal was sent at which a run whose renewals fail is aborted (the rest is its time to stop before another node may take the task)',
          ),
        reaper_interval: duration('15s').describe('how often each node looks for expired claims'),
        poll_interval: duration('1s').describe('fallback poll for claimable tasks'),
        retry_backoff_base: duration('1s').describe('first automatic retry delay, doubled each time'),
        retry_backoff_max: duration('5m').describe('longest automatic retry delay'),
      })
      .strict()
      // A renewal due later than the abort point would stop healthy runs between two renewals.
      .refine((t) => t.lease_renew_interval < t.lease_ttl * t.lease_abort_at, {
        path: ['lease_renew_interval'],
        message: 'must be shorter than lease_ttl × lease_abort_at',
      })
      .prefault({}),
    events: z
      .object({
        max_streams_per_user: int(10, 1).describe(
          'live task event streams one user may hold open on a node (429 E4291 beyond)',
        ),
      })
      .strict()
      .prefault({}),
    web: z
      .object({
        enabled: bool(true).describe('serve the built-in web console (and redirect / to it)'),
        base_path: z
          .string()
          .default('/admin')
          .refine(
            (p) => /^(\/[A-Za-z0-9._~-]+)+$/.test(p) && !/^\/(api|trpc|docs|metrics|healthz|readyz)(\/|$)/.test(p),
            'must be a path such as /admin (letters, digits, . _ ~ -), outside /api, /trpc, /docs, /metrics, /healthz and /readyz',
          )
          .describe('path the web console is served under'),
      })
      .strict()
      .prefault({}),
    quota: z
      .object({
        active_user_tasks: int(10, 0).describe(
          'pending and running user tasks (exports) one user may have; more → 429 E4291; 0 = no limit',
        ),
        idempotency_keys_per_day: int(10_000, 0).describe(
          'Idempotency-Key rows one user may create in 24 hours; more → 429 E4291; 0 = no limit',
        ),
      })
      .strict()
      .prefault({}),
    mail: z
      .object({
        template_path: z.string().default('').describe('folder of email templates overriding the built-in ones'),
      })
      .strict()
      .prefault({}),
    oauth: z
      .object({
        enabled: bool(false).describe('login through the providers below'),
        providers: z
          .array(oauthProvider)
          .default([])
          .refine((list) => new Set(list.map((p) => p.name)).size === list.length, 'provider names must be unique')
          .describe('OAuth 2 / OpenID Connect providers (see the README, OAuth login)'),
        // Each call to a provider (token exchange, user info) gets this long.
        timeout: duration('10s').describe('time allowed for each call to a provider'),
      })
      .strict()
      .prefault({}),
    tracing: z
      .object({
        service_name: z.string().default('console').describe('OpenTelemetry service name'),
        http: z
          .object({
            endpoint: z.string().describe('receiver host:port, or an http(s):// URL taken as given'),
            url_path: z.string().default('/v1/traces').describe('path the spans are posted to'),
            timeout: duration('10s').describe('time allowed for each export request'),
            insecure: bool(false).describe('plain HTTP instead of HTTPS'),
            compression,
            header: z.record(z.string(), z.string()).default({}).describe('HTTP headers sent with every export'),
            retry: retry.prefault({}).describe('retries of a batch the receiver did not take'),
            tls_config: tlsConfig.optional().describe('TLS towards the receiver'),
          })
          .strict()
          .optional()
          .describe('OTLP over HTTP (protobuf); at most one exporter block is set'),
        grpc: z
          .object({
            endpoint: z.string().describe('receiver host:port'),
            timeout: duration('10s').describe('time allowed for each export call'),
            insecure: bool(false).describe('no TLS'),
            compression,
            reconnection_period: duration('0s').describe(
              "time between connection attempts; 0s keeps grpc-js's backoff",
            ),
            header: z.record(z.string(), z.string()).default({}).describe('gRPC metadata sent with every export'),
            retry: retry.prefault({}).describe('retries of a batch the receiver did not take'),
            tls_config: tlsConfig.optional().describe('TLS towards the receiver'),
            // Checked again by grpc-js when the channel is made (method names, retry policy fields).
            service_config: z
              .string()
              .refine((v) => {
                const parsed = jsonOrText(v);
                return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
              }, 'must be a JSON object (a gRPC service config)')
              .optional()
              .describe('gRPC service config as JSON, e.g. a retryPolicy'),
          })
          .strict()
          .optional()
          .describe('OTLP over gRPC'),
        zipkin: z
          .object({ endpoint: z.string().describe('full spans URL, e.g. http://zipkin:9411/api/v2/spans') })
          .strict()
          .optional()
          .describe('Zipkin v2 JSON'),
        file: z
          .object({ path: z.string().describe('file one JSON line per span is appended to') })
          .strict()
          .optional()
          .describe('spans written to a file'),
      })
      .strict()
      .prefault({})
      .superRefine((t, ctx) => {
        const blocks = (['http', 'grpc', 'zipkin', 'file'] as const).filter((k) => t[k] !== undefined);
        if (blocks.length > 1)
          ctx.addIssue({
            code: 'custom',
            message: `only one exporter may be configured, found ${blocks.join(' and ')}`,
          });
      }),
  })
  .strict()
  .superRefine((c, ctx) => {
    // A provider's callback address defaults to server.root_url + /api/auth/oauth/<name>/callback.
    if (!c.oauth.enabled || c.server.root_url) return;
    c.oauth.providers.forEach((p, i) => {
      if (!p.redirect_url)
        ctx.addIssue({
          code: 'custom',
          path: ['oauth', 'providers', i, 'redirect_url'],
          message: 'is required when server.root_url is empty',
        });
    });
  });

export type ConsoleConfig = z.output<typeof configSchema>;
export type ConsoleConfigInput = z.input<typeof configSchema>;

/** Per-driver defaults (README, configuration table) for keys the schema leaves open. */
export const DRIVER_DEFAULTS = {
  sqlite: { port: 0, max_open_connections: 1, max_idle_connections: 1 },
  postgres: { port: 5432, max_open_connections: 100, max_idle_connections: 10 },
  mysql: { port: 3306, max_open_connections: 100, max_idle_connections: 10 },
  clickhouse: { port: 8123, max_open_connections: 100, max_idle_connections: 2 },
} as const;
