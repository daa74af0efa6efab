import type { ClickHouseClient } from '@clickhouse/client';
import Client, { type KnexQueryObject } from 'knex/lib/client.js';
import { formatQuery } from 'knex/lib/execution/internal/query-executioner.js';
import { KeyedLock } from '../../../lib/keyed-lock.ts';
import { clickhouseDriver, clientOptions, type ClickHouseConnection } from './connection.ts';
import { escapeBinding, quoteIdentifier } from './escape.ts';
import { ClickHouseQueryCompiler, countOf, type Mutation } from './query-compiler.ts';
import { ClickHouseColumnCompiler, ClickHouseSchemaCompiler, ClickHouseTableBuilder, ClickHouseTableCompiler } from './schema-compiler.ts';

/** Lightweight UPDATE needs this release or newer. */
const MIN_VERSION = [25, 7];

const TRANSACTION = /^\s*(begin|commit|rollback|savepoint|release savepoint|set transaction)\b/i;
const READ = /^\s*\(?\s*(select|with|show|describe|desc|exists|explain)\b/i;

/**
 * What every knex client of one database shares. knex hands a copy of the client to transactions (and to
 * the migrator) that keeps `driver` by reference and little else, so this is the "driver".
 */
class SharedState {
  readonly http: ClickHouseClient;
  /**
   * Mutations run one at a time, so a counted row set cannot change before the mutation runs (see Mutation).
   * One lock per database in the process: several consoles of one process on one database take turns too.
   */
  readonly mutations: KeyedLock;
  version?: Promise<void>;

  constructor(connection: ClickHouseConnection) {
    this.http = clickhouseDriver().createClient(clientOptions(connection));
    const target = `${connection.url}/${connection.database}`;
    this.mutations = mutationLocks.get(target) ?? new KeyedLock();
    mutationLocks.set(target, this.mutations);
  }
}

const mutationLocks = new Map<string, KeyedLock>();

/**
 * A ClickHouse server error named by its type and code only: the server's text repeats values of the
 * statement (`Cannot parse uuid <value>`), and errors are logged. knex puts the statement, with placeholders,
 * in front.
 */
export class ClickHouseQueryError extends Error {
  constructor(
    readonly code: string,
    readonly type: string,
  ) {
    super(`ClickHouse ${type} (${code})`);
    this.name = 'ClickHouseQueryError';
  }
}

function withoutValues(error: unknown): unknown {
  const e = error as { code?: unknown; type?: unknown };
  if (typeof e?.type === 'string' && typeof e.code === 'string') return new ClickHouseQueryError(e.code, e.type);
  return error;
}

/** A pool "connection": it only tracks what a transaction on it has written. */
interface Ticket {
  /** Writes since BEGIN, while in a transaction. */
  writes?: number;
}

/**
 * A knex client for ClickHouse (≥ 25.7) over the official HTTP client. Values are escaped into the statement
 * text here; affected-row counts, which ClickHouse does not report, are counted before each UPDATE/DELETE
 * under a process-wide mutation lock. Transactions do not exist: BEGIN/COMMIT are accepted and do nothing,
 * and a ROLLBACK leaves every statement already run applied (it is logged).
 */
export class ClickHouseKnexClient extends Client {
  private get state(): SharedState {
    return this.driver as SharedState;
  }

  // Called by knex's constructor once the connection settings are in place.
  override _driver(): unknown {
    return new SharedState(this.connectionSettings as ClickHouseConnection);
  }

  override queryCompiler(builder: unknown, formatter: unknown): unknown {
    return new ClickHouseQueryCompiler(this, builder, formatter);
  }

  override schemaCompiler(builder: unknown): unknown {
    return new ClickHouseSchemaCompiler(this, builder);
  }

  override tableBuilder(type: string, tableName: string, tableNameLike: string | undefined, fn: unknown): unknown {
    return new ClickHouseTableBuilder(this, type, tableName, tableNameLike, fn);
  }

  override tableCompiler(tableBuilder: unknown): unknown {
    return new ClickHouseTableCompiler(this, tableBuilder);
  }

  override columnCompiler(tableCompiler: unknown, columnBuilder: unknown): unknown {
    return new ClickHouseColumnCompiler(this, tableCompiler, columnBuilder);
  }

  override wrapIdentifierImpl(value: string): string {
    return quoteIdentifier(value);
  }

  // A "connection" is a ticket to the shared HTTP client.
  override async acquireRawConnection(): Promise<Ticket> {
    await (this.state.version ??= this.checkVersion());
    return {};
  }

  override async destroyRawConnection(): Promise<void> {}

  override validateConnection(): boolean {
    return true;
  }

  override async destroy(callback?: (error?: unknown) => void): Promise<void> {
    await super.destroy(callback);
    await this.state.http.close();
  }

  /** Refuses a server without lightweight UPDATE at the first statement, with a message saying why. */
  private async checkVersion(): Promise<void> {
    let version: string;
    try {
      version = String(((await this.rows('select version() as v')) as { v: string }[])[0]?.v);
    } catch (error) {
      // A later attempt (the next statement) asks again: the server may just not be up yet.
      this.state.version = undefined;
      throw error;
    }
    const [major = 0, minor = 0] = version.split('.').map(Number);
    if (major < MIN_VERSION[0]! || (major === MIN_VERSION[0] && minor < MIN_VERSION[1]!)) {
      throw new Error(`ClickHouse ${MIN_VERSION.join('.')} or newer is needed (lightweight UPDATE); the server is ${version}`);
    }
  }

  private async rows(sql: string): Promise<unknown[]> {
    try {
      return await (await this.state.http.query({ query: sql, format: 'JSONEachRow' })).json();
    } catch (error) {
      throw withoutValues(error);
    }
  }

  private async command(sql: string): Promise<void> {
    try {
      await this.state.http.command({ query: sql });
    } catch (error) {
      throw withoutValues(error);
    }
  }

  override async _query(ticket: Ticket, query: KnexQueryObject): Promise<KnexQueryObject> {
    if (TRANSACTION.test(query.sql)) {
      const verb = /^\s*(\w+)/.exec(query.sql)![1]!.toLowerCase();
      // Worth a warning only when something was written: that stays, although the caller meant to undo it.
      if (verb === 'rollback' && ticket.writes) this.logger.warn('clickhouse has no transactions: the writes before this ROLLBACK stay applied');
      if (verb === 'begin') ticket.writes = 0;
      if (verb === 'commit' || verb === 'rollback') ticket.writes = undefined;
      query.response = [];
      return query;
    }
    const sql = formatQuery(query.sql, query.bindings, undefined, this);
    const mutation = query as Partial<Mutation>;
    if (mutation.countSql !== undefined) {
      const countSql = formatQuery(mutation.countSql, query.bindings?.slice(mutation.countBindingsFrom), undefined, this);
      query.response = await this.state.mutations.run('mutations', async () => {
        const n = countOf(await this.rows(countSql));
        if (n > 0) await this.write(ticket, sql);
        return n;
      });
    } else if (READ.test(sql)) {
      query.response = await this.rows(sql);
    } else {
      await this.write(ticket, sql);
      query.response = [];
    }
    return query;
  }

  private async write(ticket: Ticket, sql: string): Promise<void> {
    if (ticket.writes !== undefined) ticket.writes++;
    await this.command(sql);
  }

  override processResponse(query: KnexQueryObject, runner: unknown): unknown {
    const rows = query.response as Record<string, unknown>[];
    if (query.output) return query.output.call(runner, rows);
    switch (query.method) {
      case 'first':
        return rows[0];
      case 'pluck':
        return rows.map((r) => r[query.pluck!]);
      // Nothing is returned from an insert: ids are generated by the service.
      case 'insert':
        return [];
      default:
        return query.response;
    }
  }
}
Object.assign(ClickHouseKnexClient.prototype, { dialect: 'clickhouse', driverName: '@clickhouse/client', _escapeBinding: escapeBinding });
