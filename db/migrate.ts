import type { Knex } from 'knex';
import type { Dialect, UpsertSpec } from './dialects/index.ts';
import { migrations } from './migrations/index.ts';
import { tableDesign, type Migration, type MigrationContext } from './migrations/migration.ts';
import type { DbLogger, DbOptions } from './options.ts';
import type { TableNames } from './tables.ts';

type Base = Omit<MigrationContext, 'createTable' | 'redesign'>;
/** Database.upsert: engines without unique keys need its lock to insert the lock row once. */
type Upsert = (spec: UpsertSpec, on?: Knex) => Promise<void>;

/** The context a migration sees, bound to the connection (or transaction) knex runs it on. */
function contextFor(knex: Knex, base: Base): MigrationContext {
  return {
    ...base,
    createTable: (name, build) =>
      knex.schema.createTable(name, (table) => {
        base.dialect.tableOptions(table, base.options, tableDesign(base.t, name));
        build(table);
      }),
    redesign: async (name, design) => void (await base.dialect.redesign?.(knex, name, design)),
  };
}

class Source implements Knex.MigrationSource<Migration> {
  constructor(private readonly base: Base) {}
  async getMigrations() {
    return migrations;
  }
  getMigrationName(m: Migration) {
    return m.name;
  }
  async getMigration(m: Migration) {
    return { up: (knex: Knex) => m.up(knex, contextFor(knex, this.base)), down: async () => {} };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Another node holds the migration lock, or won the race to create knex's bookkeeping tables. */
function isLockContention(error: unknown, dialect: Dialect): boolean {
  const e = error as { name?: string; message?: string };
  return (
    e?.name === 'MigrationLocked' ||
    /already exists|already locked/i.test(e?.message ?? '') ||
    dialect.isUniqueViolation(error)
  );
}

/**
 * Makes sure knex's lock table holds exactly one row before knex looks at it. knex checks for the row and
 * inserts it in two steps, so nodes starting together could each add one; its lock must then change exactly
 * one row, which never happens again, and every later start would wait for a lock nobody holds. A fixed key
 * makes the insert idempotent, and extra rows an earlier race left are removed (with several rows nobody can
 * hold the lock, so nothing is taken from a running migration).
 */
async function ensureOneLockRow(knex: Knex, upsert: Upsert, lockTable: string): Promise<void> {
  if (!(await knex.schema.hasTable(lockTable))) {
    // The same table knex would create.
    await knex.schema.createTable(lockTable, (table) => {
      table.increments('index').primary();
      table.integer('is_locked');
    });
  }
  const rows = (await knex(lockTable).select('index').orderBy('index')) as { index: number }[];
  if (rows.length === 0) await upsert({ table: lockTable, rows: [{ index: 1, is_locked: 0 }], key: ['index'] });
  else if (rows.length > 1) await knex(lockTable).where('index', '>', rows[0]!.index).del();
}

/**
 * Brings the schema up to date; answers the names of the migrations it applied. Nodes starting together serialise on knex's lock table: the losers see
 * "already locked" (or a racing CREATE of the bookkeeping tables) and retry until the winner is done.
 */
export async function migrateLatest(
  knex: Knex,
  ctx: { t: TableNames; dialect: Dialect; options: DbOptions; upsert: Upsert },
  logger: DbLogger,
  timeoutMs = 120_000,
): Promise<string[]> {
  const config: Knex.MigratorConfig = {
    migrationSource: new Source(ctx),
    tableName: ctx.t.migrations,
    disableMigrationsListValidation: true,
  };
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      await ensureOneLockRow(knex, ctx.upsert, `${ctx.t.migrations}_lock`);
      const [, ran] = (await knex.migrate.latest(config)) as [number, string[]];
      if (ran.length) logger.info({ migrations: ran }, 'migrations applied');
      return ran;
    } catch (error) {
      if (!isLockContention(error, ctx.dialect) || Date.now() > deadline) throw error;
      logger.debug({ attempt, reason: (error as Error).message }, 'migration lock busy, retrying');
      await sleep(Math.min(1000, 50 * attempt));
    }
  }
}

/** Whether every migration has been applied (readiness). */
export async function migrationsDone(knex: Knex, t: TableNames): Promise<boolean> {
  const rows = (await knex(t.migrations).select('name')) as { name: string }[];
  const done = new Set(rows.map((r) => r.name));
  return migrations.every((m) => done.has(m.name));
}
