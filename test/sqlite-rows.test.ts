import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { readRows, type RowStatement } from '../db/dialects/sqlite-rows.ts';

interface Connection {
  prepare(sql: string): RowStatement;
  exec(sql: string): void;
  close(): void;
}

const Sqlite = createRequire(import.meta.url)('better-sqlite3') as new (path: string) => Connection;

/** The statement, counting how often its columns are asked for. */
function counted(statement: RowStatement): { statement: RowStatement; asked: () => number } {
  let asked = 0;
  const columns = statement.columns.bind(statement);
  statement.columns = () => {
    asked++;
    return columns();
  };
  return { statement, asked: () => asked };
}

describe('SQLite rows read as value arrays', () => {
  let dir: string;
  let reader: Connection;
  let writer: Connection;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'sqlite-rows-'));
    const path = join(dir, 'rows.db');
    writer = new Sqlite(path);
    writer.exec(`create table items (id integer primary key, name text, done integer);
      insert into items (name, done) values ('a', 0), ('b', 1)`);
    reader = new Sqlite(path);
  });
  after(() => {
    reader.close();
    writer.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('rows are objects of the statement columns, bindings converted as knex converts them', () => {
    const statement = reader.prepare('select id, name, done from items where done = ? order by id');
    assert.deepEqual(readRows(statement, [true]), [{ id: 2, name: 'b', done: 1 }]);
    assert.deepEqual(readRows(statement, [false]), [{ id: 1, name: 'a', done: 0 }]);
  });

  test('a statement that names its columns asks the driver for them once', () => {
    const { statement, asked } = counted(reader.prepare('select name, id from items order by id'));
    for (let i = 0; i < 5; i++) assert.deepEqual(readRows(statement, [])[0], { name: 'a', id: 1 });
    assert.equal(asked(), 1);
  });

  test('a `select *` (the claim answers `returning *`) asks the driver for its columns once while they stay', () => {
    const { statement, asked } = counted(reader.prepare('select * from items order by id'));
    for (let i = 0; i < 5; i++) assert.deepEqual(readRows(statement, [])[1], { id: 2, name: 'b', done: 1 });
    assert.equal(asked(), 1);
    const none = counted(reader.prepare('select * from items where id > 9'));
    assert.deepEqual(readRows(none.statement, []), []);
    assert.equal(none.asked(), 0, 'no row, no builder');
  });

  test("a `select *` answers the columns another connection's migration added", () => {
    const { statement, asked } = counted(reader.prepare('select * from items where id = ?'));
    const named = reader.prepare('select done, id from items where id = ?');
    assert.deepEqual(readRows(statement, [1]), [{ id: 1, name: 'a', done: 0 }]);
    assert.deepEqual(readRows(named, [1]), [{ done: 0, id: 1 }]);
    writer.exec("alter table items add column note text default 'new'");
    assert.deepEqual(readRows(statement, [1]), [{ id: 1, name: 'a', done: 0, note: 'new' }]);
    assert.deepEqual(readRows(named, [1]), [{ done: 0, id: 1 }], 'a statement naming its columns answers them still');
    assert.equal(asked(), 2);
  });

  test('a `select *` answers the new columns of a migration that dropped one and added another', () => {
    const statement = reader.prepare('select * from items where id = ?');
    const before = readRows(statement, [2])[0]!;
    writer.exec("alter table items drop column name; alter table items add column label text default 'l'");
    const after = readRows(statement, [2])[0]!;
    assert.equal(Object.keys(after).length, Object.keys(before).length);
    assert.equal(after.label, 'l');
    assert.ok(!('name' in after), JSON.stringify(after));
  });
});
