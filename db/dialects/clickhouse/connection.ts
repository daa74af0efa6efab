import http from 'node:http';
import https from 'node:https';
import { createRequire } from 'node:module';
import type { Duplex } from 'node:stream';
import type { ClickHouseClientConfigOptions, ClickHouseSettings } from '@clickhouse/client';

const require = createRequire(import.meta.url);

/** The driver, loaded when a ClickHouse connection is made: consoles on other databases never pay its memory. */
export const clickhouseDriver = (): typeof import('@clickhouse/client') => require('@clickhouse/client');

/** How the ClickHouse knex client reaches the server: the `database.*` keys, in milliseconds. */
export interface ClickHouseConnection {
  /** `http://host:port`, or https when `database.host` names that scheme. */
  url: string;
  username: string;
  password: string;
  database: string;
  readTimeoutMs: number;
  dialTimeoutMs: number;
  maxExecutionTimeMs: number;
  compression: boolean;
  maxOpenConnections: number;
  maxIdleConnections: number;
  connectionLifetimeMs: number;
}

/**
 * Settings sent with every statement:
 * - 64-bit integers (count(), bigInteger columns) as strings, like the pg driver, so none loses precision;
 * - ISO times out (`2024-01-02T03:04:05.678Z`, what isoFromDb expects) and lenient times in;
 * - a LEFT JOIN miss is NULL, not the type's default (objection's joined graphs rely on it);
 * - NULL into a non-Nullable column is an error rather than a silent '' or 0;
 * - FINAL on every table that keeps versions (ReplacingMergeTree), so reads see only the latest version of a
 *   row without each query having to say so; plain MergeTree tables ignore it;
 * - lightweight UPDATE allowed: the first releases that have it (25.7) keep it behind this flag.
 */
export function querySettings(c: ClickHouseConnection): ClickHouseSettings {
  return {
    output_format_json_quote_64bit_integers: 1,
    date_time_output_format: 'iso',
    date_time_input_format: 'best_effort',
    join_use_nulls: 1,
    insert_null_as_default: 0,
    input_format_null_as_default: 0,
    final: 1,
    allow_experimental_lightweight_update: 1,
    max_execution_time: c.maxExecutionTimeMs / 1000,
  };
}

/**
 * An HTTP agent that gives up on a connection not established within `dialTimeoutMs` (Node's agent has no
 * connect timeout, and the client's request timeout covers the whole answer), and closes a connection once
 * it is older than `lifetimeMs` instead of keeping it for the next request.
 */
function agentClass(base: typeof http.Agent) {
  return class DialingAgent extends base {
    private readonly born = new WeakMap<Duplex, number>();

    constructor(
      options: http.AgentOptions,
      private readonly dialTimeoutMs: number,
      private readonly lifetimeMs: number,
    ) {
      super(options);
    }

    override createConnection(
      options: http.ClientRequestArgs,
      callback?: (err: Error | null, stream: Duplex) => void,
    ): Duplex | null | undefined {
      const socket = super.createConnection(options, callback);
      if (!socket) return socket;
      this.born.set(socket, Date.now());
      const timer = setTimeout(
        () => socket.destroy(new Error(`could not connect within ${this.dialTimeoutMs} ms (database.dial_timeout)`)),
        this.dialTimeoutMs,
      );
      timer.unref();
      const done = () => clearTimeout(timer);
      socket.once('connect', done);
      socket.once('secureConnect', done);
      socket.once('close', done);
      return socket;
    }

    // Returning nothing makes Node close the socket rather than keep it idle.
    override keepSocketAlive(socket: Duplex): void {
      if (Date.now() - (this.born.get(socket) ?? 0) >= this.lifetimeMs) return;
      return super.keepSocketAlive(socket);
    }
  };
}

const HttpAgent = agentClass(http.Agent);
const HttpsAgent = agentClass(https.Agent as unknown as typeof http.Agent);

/** The official client's options for a connection. */
export function clientOptions(c: ClickHouseConnection): ClickHouseClientConfigOptions {
  const Agent = c.url.startsWith('https:') ? HttpsAgent : HttpAgent;
  // No idle connections allowed: each request opens its own.
  const keepAlive = c.maxIdleConnections > 0;
  return {
    url: c.url,
    username: c.username,
    password: c.password,
    database: c.database,
    request_timeout: c.readTimeoutMs,
    compression: { request: c.compression, response: c.compression },
    http_agent: new Agent(
      { keepAlive, maxSockets: c.maxOpenConnections, maxFreeSockets: Math.max(1, c.maxIdleConnections) },
      c.dialTimeoutMs,
      c.connectionLifetimeMs,
    ),
    // The client still drops idle sockets after this, below the server's keep-alive (3 s before 23.11, 10 s
    // since), so a reused socket is never one the server has just closed.
    keep_alive: { enabled: keepAlive, idle_socket_ttl: Math.min(2500, c.connectionLifetimeMs) },
    clickhouse_settings: querySettings(c),
    application: 'console',
    // Failures reach the service as errors of the statements (logged there without their values); the
    // client's own log would print them again to the console, values included.
    log: { level: clickhouseDriver().ClickHouseLogLevel.OFF },
  };
}
