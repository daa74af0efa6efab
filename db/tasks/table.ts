import type { Knex } from 'knex';
import type { Dialect, UpsertSpec } from '../dialects/index.ts';

/** What the task store needs of a database: its connections, the tasks table's name, and its dialect. */
export interface TaskTable {
  readonly knex: Knex;
  readonly name: string;
  readonly dialect: Dialect;
  /** `dialect.upsert` holding each row's key in this process (Database.upsert). */
  upsert(spec: UpsertSpec): Promise<void>;
}
