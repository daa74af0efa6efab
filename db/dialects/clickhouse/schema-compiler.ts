import ColumnCompiler from 'knex/lib/schema/columncompiler.js';
import SchemaCompiler from 'knex/lib/schema/compiler.js';
import TableBuilder from 'knex/lib/schema/tablebuilder.js';
import TableCompiler from 'knex/lib/schema/tablecompiler.js';
import { countOf, unsupported } from './query-compiler.ts';

/**
 * Every table gets these: lightweight UPDATE (and the DELETE mask) work only on tables that keep each row's
 * block number and offset.
 */
export const LIGHTWEIGHT_MUTATIONS = 'enable_block_number_column = 1, enable_block_offset_column = 1';

const TIME_TYPES = new Set(['datetime', 'timestamp', 'date']);

export class ClickHouseSchemaCompiler extends SchemaCompiler {
  override hasTable(tableName: string): void {
    this.pushQuery({
      sql: 'select count() as c from system.tables where database = currentDatabase() and name = ?',
      bindings: [tableName],
      output: (rows) => countOf(rows) > 0,
    });
  }

  override hasColumn(tableName: string, column: string): void {
    this.pushQuery({
      sql: 'select count() as c from system.columns where database = currentDatabase() and table = ? and name = ?',
      bindings: [tableName, column],
      output: (rows) => countOf(rows) > 0,
    });
  }

  override renameTable(from: string, to: string): void {
    this.pushQuery(`rename table ${this.formatter.wrap(from)} to ${this.formatter.wrap(to)}`);
  }
}

/** knex lets only MySQL tables name their engine; ClickHouse tables need one too. */
export class ClickHouseTableBuilder extends TableBuilder {
  engine(clause: string): void {
    if (this._method === 'alter') unsupported('changing the engine', 'a table keeps the engine it was created with');
    this._single.engine = clause;
  }
}

/**
 * CREATE TABLE with an engine and a sort key instead of keys and constraints. The engine clause comes from
 * knex's `table.engine()` (the dialect's tableOptions sets it from the table's design); without an ORDER BY
 * in it, the primary key (or the increments column) sorts the table. Unique indexes and foreign keys do not
 * exist in ClickHouse: the service enforces uniqueness under its keyed lock and deletes children itself.
 */
export class ClickHouseTableCompiler extends TableCompiler {
  // Indexes go into the CREATE statement itself, so a table never exists without them.
  override createAlterTableMethods = ['index'];

  // IF NOT EXISTS always: DDL has no transactions here, and a migration that failed half-way must be able to
  // run again from its start.
  override createQuery(columns: { sql: string[]; bindings: unknown[] }): void {
    const engine = (this.single.engine as string | undefined) ?? 'MergeTree';
    const order = /\border by\b/i.test(engine)
      ? ''
      : ` order by (${this.sortKey()
          .map((c) => this.formatter.wrap(c))
          .join(', ')})`;
    this.pushQuery({
      sql: `create table if not exists ${this.tableName()} (${columns.sql.join(', ')}) engine = ${engine}${order} settings ${LIGHTWEIGHT_MUTATIONS}`,
      bindings: columns.bindings,
    });
  }

  private sortKey(): string[] {
    const primary = this._getPrimaryKeys();
    if (primary.length) return primary;
    const increments = (this.grouped.columns ?? [])
      .filter((c) => /increments/.test(c.builder._type))
      .map((c) => String(c.builder._args[0] ?? 'id'));
    if (increments.length) return increments;
    return unsupported(`a table without a primary key (${this.tableNameRaw})`, 'a ClickHouse table needs a sort key');
  }

  /** The column's knex type, to pick the kind of data-skipping index that helps its lookups. */
  private columnType(name: string): string | undefined {
    return (this.grouped.columns ?? []).find((c) => c.builder._args[0] === name)?.builder._type.toLowerCase();
  }

  override index(columns: string | string[], indexName?: string): void {
    const list = typeof columns === 'string' ? [columns] : columns;
    const name = indexName ? this.formatter.wrap(indexName) : this._indexCommand('index', this.tableNameRaw, list);
    // Times are filtered by range (min/max per granule helps); everything else by equality (a bloom filter).
    const type = TIME_TYPES.has(this.columnType(list[0]!) ?? '') ? 'minmax' : 'bloom_filter';
    const definition = `index ${name} (${list.map((c) => this.formatter.wrap(c)).join(', ')}) type ${type} granularity 1`;
    this.pushQuery(
      this.forCreate
        ? definition
        : `alter table ${this.tableName()} add ${definition.replace(/^index /, 'index if not exists ')}`,
    );
  }

  override dropIndex(columns: string | string[], indexName?: string): void {
    const list = typeof columns === 'string' ? [columns] : columns;
    const name = indexName ? this.formatter.wrap(indexName) : this._indexCommand('index', this.tableNameRaw, list);
    this.pushQuery(`alter table ${this.tableName()} drop index if exists ${name}`);
  }

  // The primary key became the sort key in createQuery; it cannot change afterwards.
  override primary(): void {
    if (this.method !== 'create' && this.method !== 'createIfNot')
      unsupported('changing the primary key', 'a ClickHouse sort key is fixed');
  }

  override unique(): void {}
  override foreign(): void {}
  override dropUnique(): void {}
  override dropForeign(): void {}
  override dropPrimary(): void {
    unsupported('dropping the primary key', 'a ClickHouse sort key is fixed');
  }

  override renameColumn(from: string, to: string): void {
    this.pushQuery(
      `alter table ${this.tableName()} rename column ${this.formatter.wrap(from)} to ${this.formatter.wrap(to)}`,
    );
  }
}
ClickHouseTableCompiler.prototype.alterColumnsPrefix = 'modify column ';

const DATETIME = "DateTime64(3, 'UTC')";

/**
 * knex column types as ClickHouse types. A column is Nullable unless it is declared not nullable or is part
 * of the primary key (knex's own rule); NOT NULL itself does not exist.
 */
export class ClickHouseColumnCompiler extends ColumnCompiler {
  constructor(client: unknown, tableCompiler: unknown, columnBuilder: unknown) {
    super(client, tableCompiler, columnBuilder);
    this.modifiers = ['defaultTo', 'comment'];
  }

  override getColumnType(): string {
    const base = super.getColumnType();
    if (this.isIncrements) return base;
    const declared = this.modified.nullable;
    const nullable = declared
      ? declared[0] !== false
      : !this.tableCompiler._getPrimaryKeys().includes(this.getColumnName());
    return nullable ? `Nullable(${base})` : base;
  }

  defaultTo(value: unknown): string {
    const raw = value as { isRawInstance?: boolean; sql?: string } | undefined;
    if (raw?.isRawInstance) return `default ${raw.sql === 'CURRENT_TIMESTAMP' ? 'now64(3)' : raw.sql}`;
    return `default ${this.client._escapeBinding(value)}`;
  }

  comment(text: string): string {
    return `comment ${this.client._escapeBinding(text)}`;
  }

  // Auto-increment ids never reach the service (they are not returned): only knex's bookkeeping tables use them.
  increments(): string {
    return 'UInt64 default generateSnowflakeID()';
  }

  bigincrements(): string {
    return this.increments();
  }

  varchar(): string {
    return 'String';
  }

  decimal(precision?: number | null, scale?: number | null): string {
    return `Decimal(${precision ?? 18}, ${scale ?? 2})`;
  }

  floating(): string {
    return 'Float64';
  }

  datetime(): string {
    return DATETIME;
  }

  timestamp(): string {
    return DATETIME;
  }

  uuid(): string {
    return 'UUID';
  }
}
Object.assign(ClickHouseColumnCompiler.prototype, {
  text: 'String',
  json: 'String',
  jsonb: 'String',
  enu: 'String',
  binary: 'String',
  bit: 'String',
  time: 'String',
  // Bool reads back as true/false in JSON, as the other drivers' booleans do once parsed.
  bool: 'Bool',
  date: 'Date32',
  integer: 'Int32',
  smallint: 'Int16',
  mediumint: 'Int32',
  tinyint: 'Int8',
  biginteger: 'Int64',
  double: 'Float64',
});
