import { z } from 'zod';
import { parseDuration } from '../../lib/duration.ts';

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
  const allowed = max === Number.MAX_SAFE_INTEGER ? `must be a whole number of at least ${min}` : `must be a whole number from ${min} to ${max}`;
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
    cert_file: z.string().optional(),
    key_file: z.string().optional(),
    ca_file: z.string().optional(),
    server_name: z.string().optional(),
    insecure_skip_verify: bool(false),
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

// SPEC: retry is an object or a string; a string holds the object as JSON, or just true/false for `enabled`.
const retry = z.preprocess(
  (v) => {
    const value = jsonOrText(v);
    return typeof value === 'boolean' ? { enabled: value } : value;
  },
  z
    .object({
      enabled: bool(true),
      initial_interval: duration('5s'),
      max_interval: duration('30s'),
      max_elapsed_time: duration('1m'),
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
  });

const oauthProvider = z
  .object({
    name: z.string().regex(/^[a-z0-9_-]+$/i, 'must be letters, digits, _ or -'),
    display_name: z.string().optional(),
    client_id: z.string(),
    client_secret: z.string(),
    icon_url: z.string().optional(),
    // An OpenID provider's issuer: its endpoints and keys come from <issuer>/.well-known/openid-configuration.
    issuer: z.url().optional(),
    auth_url: z.url().optional(),
    token_url: z.url().optional(),
    user_info_url: z.url().optional(),
    redirect_url: z.url().optional(),
    scopes: z.string().default('openid profile email'),
    // RFC 6749 §2.3.1: every server must accept HTTP Basic; some only take the secret in the body.
    token_auth_method: z.enum(['client_secret_basic', 'client_secret_post']).default('client_secret_basic'),
    role_field: z.string().optional(),
    email_field: z.string().default('email'),
    username_field: z.string().default('username'),
    full_name_field: z.string().default('fullName'),
    avatar_field: z.string().default('avatar'),
    auto_create_user: bool(false),
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
          .refine((k) => encryptKeyBytes(k) !== undefined, 'must be 32 bytes: 32 characters, 64 hex digits or base64 of 32 bytes')
          .optional(),
      })
      .strict()
      .prefault({}),
    server: z
      .object({
        host: z.string().default('0.0.0.0'),
        port: int(8080, 0, 65535),
        mode: z.enum(['debug', 'release']).default('release'),
        root_url: z.string().default(''),
        read_timeout: duration('10s'),
        write_timeout: duration('10s'),
        shutdown_timeout: duration('10s'),
        file_upload_path: z.string().default('./uploads'),
        max_upload_size: int(10_485_760, 1),
        geoip_db_path: z.string().default(''),
        trust_proxy: bool(false),
        cors_origins: corsOrigins,
      })
      .strict()
      .prefault({}),
    database: z
      .object({
        driver: z.enum(DRIVERS).default('sqlite'),
        table_prefix: z
          .string()
          .regex(/^[A-Za-z0-9_]*$/, 'must be letters, digits and _')
          .default('t_'),
        slow_threshold: duration('3s'),
        path: z.string().default('console.db'),
        host: z.string().default('127.0.0.1'),
        port: optInt(1, 65535),
        username: z.string().default(''),
        password: z.string().default(''),
        schema: z.string().default('console'),
        charset: z.string().default('utf8mb4'),
        collation: z.string().default('utf8mb4_unicode_ci'),
        max_open_connections: optInt(1),
        max_idle_connections: optInt(0),
        max_connection_life_time: duration('30s'),
        read_timeout: duration('10s'),
        dial_timeout: duration('10s'),
        max_execution_time: duration('60s'),
        enable_compression: bool(true),
      })
      .strict()
      .superRefine((d, ctx) => {
        // Several hosts are a ClickHouse cluster (replicas, shards); the driver is single node, single process.
        if (d.driver === 'clickhouse' && /[,;\s]/.test(d.host.trim()))
          ctx.addIssue({ code: 'custom', path: ['host'], message: 'the clickhouse driver is single node: give one host, not a cluster' });
      })
      .prefault({}),
    cache: z.object({ size: int(1000, 0) }).strict().prefault({}),
    jwt: z
      .object({
        secret: z.string().min(16, 'must be at least 16 characters').optional(),
        expiration: duration('24h'),
      })
      .strict()
      .prefault({}),
    log: z
      .object({
        level: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
        format: z.enum(['json', 'logfmt']).default('json'),
        path: z.string().default('logs'),
      })
      .strict()
      .prefault({}),
    bootstrap: z
      .object({
        admin_username: z.string().default('admin'),
        admin_password: z.string().optional(),
        admin_email: z.string().default('admin@example.com'),
      })
      .strict()
      .prefault({}),
    security: z
      .object({
        // scrypt cost N (a power of two). Lower it only in tests; 2^15 takes ~60 ms here.
        scrypt_cost: int(32768, 2, 1 << 20).refine((n) => (n & (n - 1)) === 0, 'must be a power of two'),
      })
      .strict()
      .prefault({}),
    rate_limit: z
      .object({
        enabled: bool(true),
        login_per_minute: int(10, 1),
        global_per_minute: int(1200, 1),
      })
      .strict()
      .prefault({}),
    metrics: z.object({ token: z.string().default('') }).strict().prefault({}),
    task: z
      .object({
        lease_ttl: duration('30s'),
        lease_renew_interval: duration('10s'),
        reaper_interval: duration('15s'),
        poll_interval: duration('1s'),
        retry_backoff_base: duration('1s'),
        retry_backoff_max: duration('5m'),
      })
      .strict()
      .prefault({}),
    mail: z.object({ template_path: z.string().default('') }).strict().prefault({}),
    oauth: z
      .object({
        enabled: bool(false),
        providers: z
          .array(oauthProvider)
          .default([])
          .refine((list) => new Set(list.map((p) => p.name)).size === list.length, 'provider names must be unique'),
        // Each call to a provider (token exchange, user info) gets this long.
        timeout: duration('10s'),
      })
      .strict()
      .prefault({}),
    tracing: z
      .object({
        service_name: z.string().default('console'),
        http: z
          .object({
            endpoint: z.string(),
            url_path: z.string().default('/v1/traces'),
            timeout: duration('10s'),
            insecure: bool(false),
            compression,
            header: z.record(z.string(), z.string()).default({}),
            retry: retry.prefault({}),
            tls_config: tlsConfig.optional(),
          })
          .strict()
          .optional(),
        grpc: z
          .object({
            endpoint: z.string(),
            timeout: duration('10s'),
            insecure: bool(false),
            compression,
            reconnection_period: duration('0s'),
            header: z.record(z.string(), z.string()).default({}),
            retry: retry.prefault({}),
            tls_config: tlsConfig.optional(),
            // Checked again by grpc-js when the channel is made (method names, retry policy fields).
            service_config: z
              .string()
              .refine((v) => {
                const parsed = jsonOrText(v);
                return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
              }, 'must be a JSON object (a gRPC service config)')
              .optional(),
          })
          .strict()
          .optional(),
        zipkin: z.object({ endpoint: z.string() }).strict().optional(),
        file: z.object({ path: z.string() }).strict().optional(),
      })
      .strict()
      .prefault({})
      .superRefine((t, ctx) => {
        const blocks = (['http', 'grpc', 'zipkin', 'file'] as const).filter((k) => t[k] !== undefined);
        if (blocks.length > 1)
          ctx.addIssue({ code: 'custom', message: `only one exporter may be configured, found ${blocks.join(' and ')}` });
      }),
  })
  .strict()
  .superRefine((c, ctx) => {
    // A provider's callback address defaults to server.root_url + /api/auth/oauth/<name>/callback.
    if (!c.oauth.enabled || c.server.root_url) return;
    c.oauth.providers.forEach((p, i) => {
      if (!p.redirect_url) ctx.addIssue({ code: 'custom', path: ['oauth', 'providers', i, 'redirect_url'], message: 'is required when server.root_url is empty' });
    });
  });

export type ConsoleConfig = z.output<typeof configSchema>;
export type ConsoleConfigInput = z.input<typeof configSchema>;

/** Per-driver defaults SPEC gives for keys the schema leaves open. */
export const DRIVER_DEFAULTS = {
  sqlite: { port: 0, max_open_connections: 1, max_idle_connections: 1 },
  postgres: { port: 5432, max_open_connections: 100, max_idle_connections: 10 },
  mysql: { port: 3306, max_open_connections: 100, max_idle_connections: 10 },
  clickhouse: { port: 8123, max_open_connections: 100, max_idle_connections: 2 },
} as const;
