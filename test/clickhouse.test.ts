import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import net, { type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Knex } from 'knex';
import { openDatabase, type Database } from '../db/database.ts';
import {
  captureLogs,
  lanes,
  openTestDatabase,
  startConsole,
  testConfig,
  type Lane,
  type TestConsole,
} from './support/harness.ts';
import { createTestPki } from './support/tls-certs.ts';

const PING = fileURLToPath(new URL('./support/clickhouse-ping.ts', import.meta.url));

/** Forwards to ClickHouse and records what arrives: the effect of the connection keys on the wire (over TLS with `tls`). */
async function recordingProxy(target: string, tls?: { cert: Buffer; key: Buffer }) {
  const requests: { url: URL; headers: IncomingHttpHeaders; socket: Socket }[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const server = (tls ? https.createServer(tls) : http.createServer()).on(
    'request',
    (req: http.IncomingMessage, res: http.ServerResponse) => {
      requests.push({ url: new URL(req.url!, 'http://proxy'), headers: req.headers, socket: req.socket });
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      const upstream = http.request(
        new URL(req.url!, target),
        { method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(res).on('finish', () => inFlight--);
        },
      );
      req.pipe(upstream);
    },
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as { port: number }).port,
    requests,
    maxInFlight: () => maxInFlight,
    sockets: () => new Set(requests.map((r) => r.socket)).size,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** A port that accepts no connection: its listener is stopped and its backlog is full, so a connect just waits. */
async function blackhole() {
  const child = spawn(
    process.execPath,
    [
      '-e',
      "require('net').createServer().listen({ port: 0, host: '127.0.0.1', backlog: 1 }, function () { console.log(this.address().port) })",
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = Number(String((await once(child.stdout!, 'data'))[0]).trim());
  process.kill(child.pid!, 'SIGSTOP');
  const fillers = Array.from({ length: 4 }, () => net.connect(port, '127.0.0.1').on('error', () => {}));
  return {
    port,
    close: () => {
      for (const f of fillers) f.destroy();
      child.kill('SIGKILL');
    },
  };
}

const sleepQuery = (seconds: number) => `select sleep(${seconds}) as s`;

// What the ClickHouse driver adds; the clickhouse lane runs every other suite as well.
const lane = lanes().find((l): l is Lane => l.name === 'clickhouse');
if (lane) {
  describe('clickhouse driver', () => {
    let t: TestConsole;
    let db: Database;
    const opened: Database[] = [];
    before(async () => {
      t = await startConsole(lane);
      db = t.c.db;
    });
    after(async () => {
      for (const d of opened) await d.close();
      await t.close();
    });

    /** A database opened from `database.*` keys through the config loader, as `createConsole` does (not migrated). */
    const open = (database: Record<string, unknown>) => {
      const d = openTestDatabase(testConfig(lane, { database }).database!);
      opened.push(d);
      return d;
    };
    const url = new URL(process.env.TEST_CLICKHOUSE_URL!);

    test('host, port, username, password, schema, max_execution_time and enable_compression reach the server', async () => {
      const proxy = await recordingProxy(url.origin);
      try {
        const on = open({ host: '127.0.0.1', port: proxy.port, max_execution_time: '7s', enable_compression: true });
        assert.deepEqual(await on.knex.raw('select currentDatabase() as db'), [{ db: url.pathname.slice(1) }]);
        const sent = proxy.requests.at(-1)!;
        assert.equal(
          sent.headers.authorization,
          `Basic ${Buffer.from(`${url.username}:${url.password}`).toString('base64')}`,
        );
        assert.equal(sent.url.searchParams.get('database'), url.pathname.slice(1));
        assert.equal(sent.url.searchParams.get('max_execution_time'), '7');
        assert.equal(sent.url.searchParams.get('enable_http_compression'), '1');
        assert.match(String(sent.headers['accept-encoding']), /gzip/);

        const off = open({ host: '127.0.0.1', port: proxy.port, enable_compression: false });
        await off.knex.raw('select 1');
        const plain = proxy.requests.at(-1)!;
        assert.equal(plain.url.searchParams.get('enable_http_compression'), null);
        assert.doesNotMatch(String(plain.headers['accept-encoding'] ?? ''), /gzip/);
      } finally {
        proxy.close();
      }
    });

    test('an https:// host speaks TLS, verified against the CAs Node trusts', async () => {
      const pki = createTestPki();
      const proxy = await recordingProxy(url.origin, { cert: pki.local.cert, key: pki.local.key });
      try {
        const untrusted = open({ host: 'https://127.0.0.1', port: proxy.port });
        await assert.rejects(untrusted.knex.raw('select 1'), /certificate|UNABLE_TO_VERIFY|SELF_SIGNED/i);
        assert.equal(proxy.requests.length, 0, 'nothing reached the server over an unverified connection');
        const database = testConfig(lane, { database: { host: 'https://127.0.0.1', port: proxy.port } }).database;
        // Not spawnSync: the proxy runs in this process.
        const child = spawn(process.execPath, ['--import', 'tsx', PING], {
          env: { ...process.env, NODE_EXTRA_CA_CERTS: pki.caFile, PING_DATABASE: JSON.stringify(database) },
          stdio: ['ignore', 'pipe', 'pipe'],
          timeout: 30_000,
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (d: Buffer) => (out += d));
        child.stderr.on('data', (d: Buffer) => (err += d));
        await once(child, 'exit');
        assert.equal(out.trim(), '1', err);
        assert.ok(proxy.requests.length > 0, 'the statements went through the TLS proxy');
      } finally {
        proxy.close();
      }
    });

    test('a wrong password or an unknown schema fails the first statement', async () => {
      await assert.rejects(open({ password: 'wrong' }).knex.raw('select 1'), /AUTHENTICATION_FAILED/);
      await assert.rejects(open({ schema: 'no_such_database' }).knex.raw('select 1'), /UNKNOWN_DATABASE/);
    });

    test('max_execution_time stops a statement on the server; read_timeout gives up on this side', async () => {
      const slow = 'select sleepEachRow(0.05) from numbers(40) settings max_block_size = 1';
      await assert.rejects(open({ max_execution_time: '300ms' }).knex.raw(slow), /TIMEOUT_EXCEEDED/);
      const t0 = performance.now();
      await assert.rejects(open({ read_timeout: '300ms' }).knex.raw(sleepQuery(1)), /timeout/i);
      assert.ok(performance.now() - t0 < 900, 'before the answer came');
    });

    test('dial_timeout gives up on a connection that is not accepted', async () => {
      const hole = await blackhole();
      try {
        const t0 = performance.now();
        await assert.rejects(
          open({ host: '127.0.0.1', port: hole.port, dial_timeout: '300ms' }).knex.raw('select 1'),
          /could not connect within 300 ms/,
        );
        assert.ok(performance.now() - t0 < 2000);
      } finally {
        hole.close();
      }
    });

    test('max_open_connections bounds the connections in use; idle ones are kept up to max_idle_connections, for max_connection_life_time', async () => {
      const proxy = await recordingProxy(url.origin);
      try {
        const two = open({ host: '127.0.0.1', port: proxy.port, max_open_connections: 2 });
        await Promise.all(Array.from({ length: 6 }, () => two.knex.raw(sleepQuery(0.05))));
        assert.equal(proxy.maxInFlight(), 2);

        const sequential = async (database: Record<string, unknown>) => {
          const before = proxy.sockets();
          const d = open({ host: '127.0.0.1', port: proxy.port, ...database });
          for (let i = 0; i < 3; i++) await d.knex.raw('select 1');
          return proxy.sockets() - before;
        };
        // Four statements each: the server version check, then three.
        assert.equal(await sequential({ max_idle_connections: 2 }), 1, 'one connection, reused');
        assert.equal(await sequential({ max_idle_connections: 0 }), 4, 'none kept idle: one each');
        assert.equal(
          await sequential({ max_idle_connections: 2, max_connection_life_time: '1ms' }),
          4,
          'too old to reuse',
        );
      } finally {
        proxy.close();
      }
    });

    describe('the knex client', () => {
      let scratch: string;
      let knex: Knex;
      before(async () => {
        knex = db.knex;
        scratch = `${db.options.tablePrefix}scratch`;
        await knex.schema.createTable(scratch, (table) => {
          table.uuid('id').primary();
          table.text('text').nullable();
          table.integer('n').notNullable().defaultTo(0);
          table.boolean('flag').notNullable().defaultTo(false);
          table.datetime('at', { precision: 3 }).nullable();
        });
      });

      test('values are escaped on this side and come back as written', async () => {
        const texts = [
          "it's",
          'back\\slash\\',
          'new\nline\r\ttab',
          'nul\0byte',
          '? and ?? and \\?',
          'üñí 漢字 😀',
          "'); drop table x; --",
          '',
        ];
        const at = new Date('2024-02-29T23:59:58.123Z');
        const rows = texts.map((text, i) => ({
          id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
          text,
          n: i,
          flag: i % 2 === 0,
          at,
        }));
        await knex(scratch).insert(rows);
        const back = (await knex(scratch).orderBy('id')) as { text: string; n: number; flag: boolean; at: string }[];
        assert.deepEqual(
          back.map((r) => r.text),
          texts,
        );
        assert.deepEqual(
          back.map((r) => r.flag),
          rows.map((r) => r.flag),
        );
        assert.equal(back[0]!.at, at.toISOString());
        assert.equal(((await knex(scratch).where('text', "it's").first('n')) as { n: number }).n, 0);
        assert.equal(
          ((await knex(scratch).count({ c: '*' })) as { c: unknown }[])[0]!.c,
          String(texts.length),
          '64-bit counts as strings, like pg',
        );
      });

      test('UPDATE and DELETE report the rows they changed, and the next read sees them', async () => {
        await knex(scratch).insert([
          { id: '10000000-0000-4000-8000-000000000001', n: 100 },
          { id: '10000000-0000-4000-8000-000000000002', n: 100 },
        ]);
        assert.equal(await knex(scratch).where('n', 100).update({ text: 'changed' }), 2);
        assert.equal(await knex(scratch).where('n', 100).where('text', 'changed').increment('n', 1), 2);
        assert.equal(await knex(scratch).where('n', 100).update({ text: 'none' }), 0);
        assert.equal(await knex(scratch).where('n', 101).del(), 2);
        assert.equal(await knex(scratch).where('n', 101).del(), 0);
      });

      test('what ClickHouse cannot do is refused when the statement is built, saying what to do instead', () => {
        const cases: [() => unknown, RegExp][] = [
          [() => knex(scratch).forUpdate().toSQL(), /forUpdate\(\) is not supported.*withLock/],
          [() => knex(scratch).forShare().toSQL(), /forShare\(\) is not supported/],
          [
            () => knex(scratch).insert({ id: 'x' }).onConflict('id').ignore().toSQL(),
            /onConflict\(\) is not supported/,
          ],
          [() => knex(scratch).insert({ id: 'x' }).onConflict('id').merge().toSQL(), /onConflict\(\) is not supported/],
          [() => knex(scratch).upsert({ id: 'x' }).toSQL(), /Upsert is not yet supported/],
          [
            () => knex(scratch).join('other', 'other.id', `${scratch}.id`).update({ n: 1 }).toSQL(),
            /update with a join is not supported.*sub-query/,
          ],
          [() => knex(scratch).orderBy('id').limit(1).del().toSQL(), /delete with order or limit is not supported/],
        ];
        for (const [build, message] of cases) assert.throws(build, message);
      });

      test('a transaction is no transaction: writes before a failure stay, and a warning says so', async () => {
        const { logger, lines } = captureLogs('warn');
        const logged = openDatabase({ ...db.options }, logger);
        opened.push(logged);
        const id = '20000000-0000-4000-8000-000000000001';
        await assert.rejects(
          logged.knex.transaction(async (trx) => {
            await trx(scratch).insert({ id, n: 7 });
            throw new Error('half-way');
          }),
          /half-way/,
        );
        assert.ok(await knex(scratch).where({ id }).first());
        assert.ok(
          lines.some((l) => /no transactions/.test(String(l.knex))),
          JSON.stringify(lines),
        );
      });

      test('server errors name the problem but never a value of the statement', async () => {
        const error = await knex(scratch)
          .insert({ id: 'hunter2-not-a-uuid', n: 1 })
          .then(
            () => undefined,
            (e: Error & { code?: string; type?: string }) => e,
          );
        assert.ok(error, 'refused');
        assert.doesNotMatch(error.message, /hunter2/);
        assert.match(error.message, /ClickHouse [A-Z_]+ \(\d+\)/);
      });
    });

    test('tables follow their design: entities by id, logs by time, settings keep the newest version', async () => {
      const tables = (await db.knex.raw(
        'select name, engine, sorting_key from system.tables where database = currentDatabase() and name like ?',
        [`${db.options.tablePrefix}%`],
      )) as { name: string; engine: string; sorting_key: string }[];
      const design = Object.fromEntries(
        tables.map((r) => [
          r.name.slice(db.options.tablePrefix.length),
          `${r.engine}: ${r.sorting_key.replace(/^\((.*)\)$/, '$1')}`,
        ]),
      );
      assert.equal(design.users, 'MergeTree: id');
      assert.equal(design.role_permissions, 'MergeTree: role_id, permission');
      assert.equal(design.settings, 'ReplacingMergeTree: key');
      assert.equal(design.audit_logs, 'MergeTree: created_at, id');
      assert.equal(design.task_logs, 'MergeTree: task_id, created_at, id');
    });
  });
}
