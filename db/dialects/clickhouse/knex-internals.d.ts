// knex ships no types for the classes a dialect extends; these are the parts the ClickHouse dialect uses.
// Members are loosely typed where knex itself passes arbitrary builder state around.

declare module 'knex/lib/util/string.js' {
  type Escape = (value: unknown, ctx?: object) => string;
  type Step = (value: unknown, escape: Escape, ctx: object) => string;
  export function makeEscape(config: {
    escapeString?: (value: unknown) => string;
    escapeBuffer?: (value: Buffer) => string;
    escapeObject?: (value: object) => string;
    escapeDate?: (value: Date) => string;
    wrap?: (escape: Step) => Escape;
  }): Escape;
}

declare module 'knex/lib/execution/internal/query-executioner.js' {
  export function formatQuery(
    sql: string,
    bindings: unknown[] | undefined,
    timeZone: undefined,
    client: { _escapeBinding(value: unknown): string },
  ): string;
}

declare module 'knex/lib/client.js' {
  import { EventEmitter } from 'node:events';
  export interface KnexQueryObject {
    sql: string;
    bindings?: unknown[];
    method?: string;
    response?: unknown;
    output?: (this: unknown, response: unknown) => unknown;
    pluck?: string;
    [extra: string]: unknown;
  }
  export default class Client extends EventEmitter {
    constructor(config: Record<string, unknown>);
    config: Record<string, any>;
    connectionSettings: Record<string, any>;
    logger: { warn(message: string): void; debug?(message: string): void };
    driver: any;
    pool: unknown;
    dialect: string;
    driverName: string;
    valueForUndefined: unknown;
    _escapeBinding: (value: unknown, ctx?: object) => string;
    _driver(): unknown;
    queryCompiler(builder: unknown, formatter: unknown): unknown;
    schemaCompiler(...args: unknown[]): unknown;
    tableBuilder(type: string, tableName: string, tableNameLike: string | undefined, fn: unknown): unknown;
    tableCompiler(...args: unknown[]): unknown;
    columnCompiler(...args: unknown[]): unknown;
    wrapIdentifierImpl(value: string): string;
    poolDefaults(): Record<string, unknown>;
    acquireRawConnection(): Promise<unknown>;
    destroyRawConnection(connection: unknown): Promise<void>;
    validateConnection(connection: unknown): boolean | Promise<boolean>;
    destroy(callback?: (error?: unknown) => void): Promise<void>;
    _query(connection: any, query: KnexQueryObject): Promise<KnexQueryObject>;
    processResponse(query: KnexQueryObject, runner: unknown): unknown;
    parameter(value: unknown, builder: unknown, bindingsHolder: unknown): string;
    raw(sql: string, bindings?: unknown[]): unknown;
  }
}

declare module 'knex/lib/dialects/mysql/query/mysql-querycompiler.js' {
  export default class QueryCompiler_MySQL {
    constructor(client: unknown, builder: unknown, formatter: unknown);
    client: any;
    builder: unknown;
    formatter: { columnize(columns: unknown): string; wrap(value: unknown): string };
    bindingsHolder: { bindings: unknown[] };
    single: Record<string, any>;
    grouped: Record<string, any[] | undefined>;
    readonly tableName: string;
    where(): string;
    join(): string;
    order(): string;
    insert(): string;
    update(): unknown;
    del(): unknown;
    forUpdate(): string;
    forShare(): string;
    skipLocked(): string;
    noWait(): string;
    whereLike(statement: { column: unknown; value: unknown }): string;
    whereILike(statement: { column: unknown; value: unknown }): string;
    _prepUpdate(data: unknown): string[];
    _returningCheck(): void;
  }
}

declare module 'knex/lib/schema/compiler.js' {
  export default class SchemaCompiler {
    constructor(client: unknown, builder: unknown);
    client: any;
    formatter: { wrap(value: unknown): string };
    pushQuery(query: string | { sql: string; bindings?: unknown[]; output?: (response: any) => unknown }): void;
    hasTable(tableName: string): void;
    hasColumn(tableName: string, column: string): void;
    renameTable(from: string, to: string): void;
  }
}

declare module 'knex/lib/schema/tablebuilder.js' {
  export default class TableBuilder {
    constructor(client: unknown, method: string, tableName: string, tableNameLike: string | undefined, fn: unknown);
    _method: string;
    _single: Record<string, unknown>;
  }
}

declare module 'knex/lib/schema/tablecompiler.js' {
  export interface ColumnStatement {
    builder: { _type: string; _args: unknown[]; _method: string };
  }
  export default class TableCompiler {
    constructor(client: unknown, tableBuilder: unknown);
    client: any;
    method: string;
    tableNameRaw: string;
    single: Record<string, any>;
    grouped: { columns?: ColumnStatement[]; alterTable?: { method: string; args: unknown[] }[] };
    formatter: { wrap(value: unknown): string; columnize(value: unknown): string };
    forCreate?: boolean;
    createAlterTableMethods?: string[];
    alterColumnsPrefix: string;
    addColumnsPrefix: string;
    dropColumnPrefix: string;
    pushQuery(query: string | { sql: string; bindings?: unknown[] }): void;
    tableName(): string;
    createQuery(columns: { sql: string[]; bindings: unknown[] }, ifNot?: boolean, like?: boolean): void;
    _getPrimaryKeys(): string[];
    _indexCommand(type: string, tableName: string, columns: string[]): string;
    index(columns: string | string[], indexName?: string): void;
    unique(columns: string | string[], indexName?: unknown): void;
    primary(columns?: unknown): void;
    foreign(data: unknown): void;
    dropIndex(columns: string | string[], indexName?: string): void;
    dropUnique(columns?: unknown): void;
    dropForeign(columns?: unknown): void;
    dropPrimary(name?: unknown): void;
    renameColumn(from: string, to: string): void;
  }
}

declare module 'knex/lib/schema/columncompiler.js' {
  export default class ColumnCompiler {
    constructor(client: unknown, tableCompiler: unknown, columnBuilder: unknown);
    client: any;
    tableCompiler: { _getPrimaryKeys(): string[] };
    modifiers: string[];
    modified: Record<string, unknown[] | undefined>;
    isIncrements: boolean;
    getColumnName(): string;
    getColumnType(): string;
  }
}
