import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Knex } from 'knex';
import type { Database } from '../db/database.ts';
import { countPendingTasksByType } from '../db/repositories/tasks.ts';
import { expiredLeases } from '../db/tasks/expired.ts';
import { CLAIM_ORDER, claimable, toSql } from '../db/tasks/predicates.ts';
import type { TaskTable } from '../db/tasks/table.ts';
import { dropOwnTables, lanes, openTestDatabase } from './support/harness.ts';

type Sql = { sql: string; bindings: readonly unknown[] };

/** How each engine shows an index's definition and a statement's plan (its values bound as parameters). */
const engines: Record<
  string,
  {
    definitions(db: Database): Promise<string[]>;
    /** Definitions that must be there, and ones that must not (the index columns before any WHERE). */
    indexes: { present: RegExp[]; absent: RegExp };
    /** Whether the claim's index holds every column the claim reads (the type too). */
    coveringClaim: boolean;
    plan(db: Database, q: Sql): Promise<string>;
  }
> = {
  postgres: {
    indexes: {
      present: [
        /\(run_after, id\) WHERE \(\(\(status\)::text = 'pending'::text\) AND \(deleted_at IS NULL\)\)/,
        /\(lease_expires_at\) WHERE \(\(status\)::text = 'running'::text\)/,
        /UNIQUE INDEX .*\(fire_key\) WHERE \(fire_key IS NOT NULL\)/,
      ],
      absent: /status|max_retries/,
    },
    coveringClaim: false,
    definitions: async (db) =>
      (
        (await db.knex.raw('select indexdef from pg_indexes where tablename = ?', [db.t.tasks])).rows as {
          indexdef: string;
        }[]
      ).map((r) => r.indexdef),
    // Sequential scans ruled out: on a small table the planner would rather read it all.
    plan: (db, { sql, bindings }) =>
      db.knex.transaction(async (trx) => {
        await trx.raw('set local enable_seqscan = off');
        // knex reports a statement it sent with PostgreSQL's own placeholders ($1); raw takes `?`.
        const explained = await trx.raw(`explain ${sql.replace(/\$\d+/g, '?')}`, bindings as Knex.RawBinding[]);
        const rows = explained.rows as { 'QUERY PLAN': string }[];
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      }),
  },
  sqlite: {
    indexes: {
      present: [
        /\(`run_after`, `id`, `type`, `status`, `deleted_at`\) where status = 'pending' and `deleted_at` is null$/,
        /\(`lease_expires_at`\) where status = 'running'$/,
      ],
      absent: /claim_index/,
    },
    coveringClaim: true,
    definitions: async (db) =>
      (
        (await db.knex.raw("select sql from sqlite_master where type = 'index' and tbl_name = ? and sql is not null", [
          db.t.tasks,
        ])) as { sql: string }[]
      ).map((r) => r.sql),
    // With every value null: SQLite picks a partial index for values bound later only by preparing the statement
    // again for each run's values, so the statement's text alone must let it take the index.
    plan: async (db, { sql, bindings }) =>
      (
        (await db.knex.raw(
          `explain query plan ${sql}`,
          bindings.map(() => null),
        )) as { detail: string }[]
      )
        .map((r) => r.detail)
        .join('\n'),
  },
};

/** The statements `work` sends through knex. */
async function statementsOf(db: Database, work: () => Promise<unknown>): Promise<Sql[]> {
  const seen: Sql[] = [];
  const listen = (q: Sql) => seen.push(q);
  db.knex.on('query', listen);
  try {
    await work();
  } finally {
    db.knex.off('query', listen);
  }
  return seen;
}

// Migrations 010 (PostgreSQL) and 012 (SQLite): the task indexes of the engine's statements hold only the rows
// those statements look for, and the statements find them: the reaper's and the pending count's as they are sent,
// the claim's candidates as the claim's UPDATE selects them.
for (const lane of lanes().filter((l) => l.name in engines)) {
  const engine = engines[lane.name]!;
  describe(`task indexes [${lane.name}]`, () => {
    let db: Database;
    let table: TaskTable;
    before(async () => {
      db = openTestDatabase(lane.database());
      await db.migrate();
      table = { knex: db.knex, name: db.t.tasks, dialect: db.dialect, upsert: (spec) => db.upsert(spec) };
    });
    after(async () => {
      await dropOwnTables({ db });
      await db.close();
    });

    const has = (defs: string[], pattern: RegExp) =>
      assert.ok(
        defs.some((d) => pattern.test(d)),
        `${pattern} in\n${defs.join('\n')}`,
      );

    test('indexes hold only the row versions a query looks for', async () => {
      const defs = await engine.definitions(db);
      for (const pattern of engine.indexes.present) has(defs, pattern);
      const absent = defs.filter((d) => engine.indexes.absent.test(d.split(/ where /i)[0]!));
      assert.deepEqual(absent, [], defs.join('\n'));
    });

    test('the claim, the reaper and the count of pending tasks use their partial indexes', async () => {
      const claim = toSql(table, db.knex(db.t.tasks).select('id'), claimable(['report']))
        .orderBy(CLAIM_ORDER)
        .limit(10)
        .toSQL();
      const pending = new RegExp(`${db.t.tasks}_pending_index`);
      const plan = await engine.plan(db, claim);
      assert.match(plan, pending);
      // SQLite's holds the type too: the claim skips tasks of types this node does not run without their rows.
      if (engine.coveringClaim) assert.match(plan, /USING COVERING INDEX/);
      const [reap] = await statementsOf(db, () => expiredLeases(table, 100));
      assert.match(await engine.plan(db, reap!), new RegExp(`${db.t.tasks}_running_index`));
      const [count] = await statementsOf(db, () => countPendingTasksByType(db));
      assert.match(await engine.plan(db, count!), pending);
    });
  });
}
