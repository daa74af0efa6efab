import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { TRPCError } from '@trpc/server';
import type { Knex } from 'knex';
import type { Database } from '../db/database.ts';
import { isDatabaseUnavailable } from '../db/dialects/index.ts';
import { migrations } from '../db/migrations/index.ts';
import { tableNames } from '../db/tables.ts';
import pino from 'pino';
import { createConsole } from '../index.ts';
import { toErrorBody } from '../routers/common/error-body.ts';
import { until } from './support/engine-node.ts';
import { captureLogs, lanes, startConsole, testConfig, type Lane } from './support/harness.ts';

/** Every table in the database (SQLite file, PostgreSQL `public` schema, MySQL schema) whose name matches `like`. */
async function tables(db: Database, like = '%'): Promise<string[]> {
  return (await db.dialect.listTables(db.knex, like)).sort();
}

/** A fresh, distinctive prefix on the lane's database (SQLite: a fresh file). */
function freshDatabase(lane: Lane) {
  return { ...lane.database(), table_prefix: `p${randomBytes(3).toString('hex')}_` };
}

const migrationRows = async (knex: Knex, table: string) =>
  ((await knex(table).select('name')) as { name: string }[]).map((r) => r.name).sort();

for (const lane of lanes()) {
  describe(`database [${lane.name}]`, () => {
    test('three nodes starting together on a fresh schema all succeed and migrate it once', async () => {
      const database = freshDatabase(lane);
      const { logger, lines } = captureLogs('debug');
      const results = await Promise.allSettled(
        // Nodes of one database share one encryption key, as a deployment of several nodes must (without it each
        // start warns that the generated secrets are stored unsealed, or that a key file was made).
        [0, 1, 2].map((i) =>
          startConsole(
            lane,
            // The web console's build is not this test's business (a fresh checkout has none: a warning).
            { database, global: { encrypt_key: 'k'.repeat(32) }, web: { enabled: false } },
            { logger },
            { keepTables: i > 0 },
          ),
        ),
      );
      const started = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      try {
        for (const r of results) assert.equal(r.status, 'fulfilled', r.status === 'rejected' ? String(r.reason) : '');
        // Waiting for another node's migration lock is normal, not worth a warning.
        assert.deepEqual(
          lines.filter((l) => (l.level as number) >= 40),
          [],
        );
        const { knex, t } = started[0]!.c.db;
        assert.deepEqual(await migrationRows(knex, t.migrations), migrations.map((m) => m.name).sort());
        const users = (await knex(t.users).select('username')) as { username: string }[];
        assert.deepEqual(
          users.map((u) => u.username),
          ['admin'],
          'one administrator',
        );
        const roles = ((await knex(t.roles).select('name')) as { name: string }[]).map((r) => r.name).sort();
        assert.deepEqual(roles, ['admin', 'operator', 'viewer']);
        // Every node signs with the one shared secret: a token from one is accepted by the others.
        const token = await started[1]!.login();
        for (const node of started) assert.equal((await node.request('GET', '/api/auth/me', { token })).status, 200);
      } finally {
        for (const node of started.reverse()) await node.close();
      }
    });

    test('a restart on a migrated schema applies nothing again', async () => {
      const first = await startConsole(lane, { database: freshDatabase(lane) });
      try {
        const again = await startConsole(lane, { database: first.database }, {}, { keepTables: true });
        await again.close();
        const { knex, t } = first.c.db;
        assert.deepEqual(await migrationRows(knex, t.migrations), migrations.map((m) => m.name).sort());
      } finally {
        await first.close();
      }
    });

    test('a second migration lock row (left by racing first starts) does not block later starts', async () => {
      const first = await startConsole(lane, { database: freshDatabase(lane) });
      try {
        const { knex, t } = first.c.db;
        // knex checks for the lock row and inserts it in two steps, so nodes starting together could each add one;
        // its lock then never changes exactly one row and no node could take it again.
        await knex(`${t.migrations}_lock`).insert({ index: 2, is_locked: 0 });
        const again = await startConsole(lane, { database: first.database }, {}, { keepTables: true });
        await again.close();
        assert.equal(((await knex(`${t.migrations}_lock`).select('*')) as unknown[]).length, 1);
      } finally {
        await first.close();
      }
    });

    test('database.table_prefix applies to every table', async () => {
      const database = freshDatabase(lane);
      const prefix = database.table_prefix;
      const node = await startConsole(lane, { database });
      try {
        const notCreated = node.c.db.dialect.keepLiveRowCount ? [] : [tableNames(prefix).taskCount];
        const expected = [...Object.values(tableNames(prefix)), `${prefix}migrations_lock`]
          .filter((name) => !notCreated.includes(name))
          .sort();
        assert.deepEqual(await tables(node.c.db, `${prefix}%`), expected);
        // Nothing was created outside the prefix: the SQLite file holds only prefixed tables, and the shared
        // servers hold no unprefixed twin of ours (nor knex's default bookkeeping tables).
        const unprefixed = [...Object.values(tableNames('')), 'knex_migrations', 'knex_migrations_lock'];
        const all = await tables(node.c.db);
        if (lane.name === 'sqlite') assert.deepEqual(all, expected);
        else for (const name of unprefixed) assert.ok(!all.includes(name), `unprefixed table ${name}`);
      } finally {
        await node.close();
      }
    });

    test('/readyz answers 200 when migrated and 503 when the schema is not', async () => {
      const node = await startConsole(lane, { database: freshDatabase(lane) });
      try {
        const ready = await node.request('GET', '/readyz');
        assert.equal(ready.status, 200);
        const { knex, t } = node.c.db;
        await knex.schema.renameTable(t.migrations, `${t.migrations}_away`);
        try {
          assert.equal((await node.request('GET', '/readyz')).status, 503);
        } finally {
          await knex.schema.renameTable(`${t.migrations}_away`, t.migrations);
        }
        assert.equal((await node.request('GET', '/readyz')).status, 200);
        assert.equal((await node.request('GET', '/healthz')).status, 200);
      } finally {
        await node.close();
      }
    });

    test('slow queries are logged with their SQL and never their bound values', async () => {
      const { logger, lines } = captureLogs();
      const node = await startConsole(lane, { database: { ...freshDatabase(lane), slow_threshold: '0s' } }, { logger });
      try {
        const admin = await node.login();
        const secretPassword = 'Very-Secret-Password-42';
        const created = await node.request('POST', '/api/users', {
          token: admin,
          body: { username: 'slowpoke', email: 'slowpoke@example.test', password: secretPassword },
        });
        assert.equal(created.status, 201);
        const needle = 'needle-search-term-7x';
        assert.equal((await node.request('GET', `/api/users?search=${needle}`, { token: admin })).status, 200);

        const slow = lines.filter((l) => l.msg === 'slow query');
        assert.ok(slow.length > 5, 'every query is slow at a 0s threshold');
        for (const l of slow) {
          assert.equal(l.level, 40);
          assert.equal(typeof l.sql, 'string');
          assert.equal(typeof l.duration_ms, 'number');
        }
        assert.ok(
          slow.some((l) => /insert into/i.test(String(l.sql)) && String(l.sql).includes('users')),
          'the user insert',
        );
        const hashes = (
          (await node.c.db.knex(node.c.db.t.users).select('password_hash')) as { password_hash: string }[]
        ).map((r) => r.password_hash);
        const text = JSON.stringify(lines);
        for (const secret of [secretPassword, needle, 'slowpoke@example.test', ...hashes])
          assert.ok(!text.includes(secret), `log contains ${secret.slice(0, 12)}…`);
      } finally {
        await node.close();
      }
    });

    test('a failing query is logged with its SQL but never its bound values', async () => {
      const { logger, lines } = captureLogs();
      const node = await startConsole(lane, { database: freshDatabase(lane) }, { logger });
      const { knex, t } = node.c.db;
      const login = 'bound-value-7q@example.test';
      try {
        await knex.schema.renameTable(t.users, `${t.users}_away`);
        const res = await node.request('POST', '/api/auth/login', {
          body: { username: login, password: 'Bound-Password-7q' },
        });
        assert.equal(res.status, 500);
        assert.equal(res.body.code, 'E5001');
        assert.doesNotMatch(res.text, /select|users/i, 'no SQL in the answer');
        const failed = lines.filter((l) => l.msg === 'request failed');
        assert.equal(failed.length, 1);
        assert.match(JSON.stringify(failed[0]), /select .*users/, 'the SQL is there to debug with');
        const text = JSON.stringify(lines);
        for (const secret of [login, 'Bound-Password-7q']) assert.ok(!text.includes(secret), `log contains ${secret}`);
      } finally {
        await knex.schema.renameTable(`${t.users}_away`, t.users).catch(() => {});
        await node.close();
      }
    });

    test('the default threshold (3s) logs nothing for ordinary queries', async () => {
      const { logger, lines } = captureLogs();
      const node = await startConsole(lane, { database: freshDatabase(lane) }, { logger });
      // Startup DDL on a busy shared server may take seconds; ordinary requests must not.
      const afterStart = lines.length;
      try {
        await node.login();
        assert.deepEqual(
          lines.slice(afterStart).filter((l) => l.msg === 'slow query'),
          [],
        );
      } finally {
        await node.close();
      }
    });
  });
}

describe('failed start', () => {
  test('closes what it opened: no database pool, change feed or timer is left behind', async () => {
    // Standard output and error get their handles on first use, whoever uses them: not the console's to close.
    void [process.stdout, process.stderr];
    const before = process.getActiveResourcesInfo().length;
    // The GeoIP database is opened after the database and the change feed, so this start fails half-way.
    const config = testConfig(lanes()[0]!, { server: { geoip_db_path: '/nonexistent/geo.mmdb' } });
    await assert.rejects(
      createConsole({ config, env: {}, logger: pino({ level: 'silent' }) }),
      /server\.geoip_db_path: cannot open/,
    );
    // Earlier suites' connections may still be closing (the count can fall), and closing takes a few turns of
    // the event loop; a leak is a handle added that stays.
    assert.ok(
      await until(() => process.getActiveResourcesInfo().length <= before, 1000),
      process.getActiveResourcesInfo().join(', '),
    );
  });
});

describe('database unavailable errors', () => {
  const envelope = (error: unknown) => toErrorBody(error, 'en');
  const coded = (code: string, message = 'x') => Object.assign(new Error(message), { code });

  test('connection-lost and server-down errors of every driver answer 503 E5031, however wrapped', () => {
    const down = [
      coded('ECONNREFUSED'),
      coded('57P01', 'select 1 - terminating connection due to administrator command'),
      new Error('select 1 - Connection terminated unexpectedly'),
      coded('PROTOCOL_CONNECTION_LOST'),
      coded('ER_SERVER_SHUTDOWN'),
      // node-postgres's connect timeout (as its own, and as the cause it gives), read timeout and broken client;
      // the session PostgreSQL ended as idle in transaction; mysql2's statement timeout.
      new Error('timeout expired'),
      new Error('Connection terminated due to connection timeout', { cause: new Error('timeout expired') }),
      new Error('Query read timeout'),
      new Error('Client has encountered a connection error and is not queryable'),
      coded('25P03', 'terminating connection due to idle-in-transaction timeout'),
      coded('PROTOCOL_SEQUENCE_TIMEOUT', 'Query inactivity timeout'),
      Object.assign(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'), {
        name: 'KnexTimeoutError',
      }),
      // objection's wrapper, and tRPC's.
      Object.assign(new Error('wrapped'), { nativeError: coded('ECONNRESET') }),
      new TRPCError({ code: 'INTERNAL_SERVER_ERROR', cause: coded('ECONNREFUSED') }),
    ];
    for (const error of down) {
      assert.ok(isDatabaseUnavailable(error), String(error));
      assert.deepEqual(envelope(error), { status: 503, code: 'E5031', err: 'database unavailable; try again shortly' });
    }
  });

  test('other database errors stay 500', () => {
    for (const error of [coded('23505'), coded('ER_DUP_ENTRY'), coded('ER_PARSE_ERROR'), new Error('boom')]) {
      assert.equal(isDatabaseUnavailable(error), false, String(error));
      assert.equal(envelope(error).status, 500);
    }
  });
});
