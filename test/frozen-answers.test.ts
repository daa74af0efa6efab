import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { deepFreeze } from '../lib/deep-freeze.ts';
import { listOutput } from '../routers/common/schemas.ts';
import { rowSchemaOf, serialisedOncePerFrozen, validatedOncePerFrozen } from '../server/http/frozen-answers.ts';

const row = z.object({ id: z.string(), n: z.number().int() });
const pageSchema = listOutput(row);

/** A validator counting the rows it was run on, with the row validation the transports derive from the schema. */
function counted(schema: z.ZodType) {
  const calls = { answers: 0, rows: 0 };
  const rowSchema = rowSchemaOf(schema)!;
  const validate = validatedOncePerFrozen(
    (data) => {
      calls.answers++;
      calls.rows += (Array.isArray(data) ? data : (data as { data: unknown[] }).data).length;
      return schema.parse(data);
    },
    (r) => {
      calls.rows++;
      return rowSchema.parse(r);
    },
  );
  return { calls, validate };
}

describe('answers made afresh from frozen rows', () => {
  test('the row schema is found in a list page and in an array answer, nowhere else', () => {
    assert.equal(rowSchemaOf(pageSchema), row);
    assert.equal(rowSchemaOf(z.array(row)), row);
    assert.equal(rowSchemaOf(row), undefined);
    assert.equal(rowSchemaOf(z.object({ data: z.string() })), undefined);
    assert.equal(rowSchemaOf(z.array(row).min(1)), undefined, 'rows checked together are validated together');
    assert.equal(rowSchemaOf(listOutput(row).extend({ data: z.array(row).max(5) })), undefined);
    assert.equal(rowSchemaOf(pageSchema.refine((p) => p.data.length <= p.total)), undefined);
  });

  test('each frozen row is validated once; the rest of the answer every time', () => {
    const { calls, validate } = counted(pageSchema);
    const rows = [deepFreeze({ id: 'a', n: 1 }), deepFreeze({ id: 'b', n: 2 })];
    const answer = () => ({ data: rows, total: 2, current: 1, page_size: 10 });
    const first = validate(answer());
    assert.deepEqual(first, answer());
    assert.deepEqual(calls, { answers: 1, rows: 2 });
    assert.deepEqual(validate(answer()), answer());
    assert.deepEqual(calls, { answers: 2, rows: 2 }, 'the second answer validated no row again');
    const more = { data: [...rows, deepFreeze({ id: 'c', n: 3 })], total: 3, current: 1, page_size: 10 };
    assert.deepEqual(validate(more), { ...more, data: [...rows, { id: 'c', n: 3 }] });
    assert.deepEqual(calls, { answers: 3, rows: 3 }, 'only the new row');
  });

  test('a deep-frozen array of rows (a page handed out again) keeps its validated rows, built row by row', () => {
    const { calls, validate } = counted(pageSchema);
    const a = deepFreeze({ id: 'a', n: 1 });
    const rows = deepFreeze([a, deepFreeze({ id: 'b', n: 2 })]);
    const answer = () => ({ data: rows, total: 2, current: 1, page_size: 10 });
    const first = validate(answer()) as { data: unknown[] };
    assert.deepEqual(first, answer());
    assert.equal((validate(answer()) as { data: unknown[] }).data, first.data, 'the same validated rows again');
    assert.deepEqual(calls, { answers: 2, rows: 2 }, 'the rows once, the rest of the page each time');
    const next = deepFreeze([a, deepFreeze({ id: 'c', n: 3 })]);
    assert.deepEqual(validate({ ...answer(), data: next }), { ...answer(), data: [a, { id: 'c', n: 3 }] });
    assert.deepEqual(calls, { answers: 3, rows: 3 }, 'a page sharing a row validates only its new one');

    const arrays = counted(z.array(row));
    const frozenArray = deepFreeze([a, deepFreeze({ id: 'd', n: 4 })]);
    assert.deepEqual(arrays.validate(frozenArray), frozenArray);
    assert.deepEqual(arrays.validate(deepFreeze([a])), [a]);
    assert.deepEqual(arrays.calls, { answers: 0, rows: 2 }, 'a frozen array answer: row by row, each row once');
    const bad = deepFreeze([deepFreeze({ id: 'x', n: 0.5 })]);
    assert.throws(() => validate({ ...answer(), data: bad }));
    assert.throws(() => validate({ ...answer(), data: bad }), 'a failure is not kept');
    assert.throws(() => arrays.validate(bad));
    assert.throws(() => arrays.validate(bad));
  });

  test('a frozen row that fails is refused every time, and rows not frozen are validated with their answer', () => {
    const { calls, validate } = counted(z.array(row));
    const bad = deepFreeze({ id: 'x', n: 1.5 });
    assert.throws(() => validate([bad]));
    assert.throws(() => validate([bad]), 'a failure is not kept');
    const loose = [{ id: 'a', n: 1 }];
    validate(loose);
    validate(loose);
    assert.equal(calls.rows, 2 + 2, 'a row not frozen is validated each time, with its answer');
    assert.throws(() => validate([deepFreeze({ id: 'a', n: 1 }), { id: 'b', n: 0.5 }]), 'mixed: the whole answer');
  });

  test('the body of an answer of frozen rows is the body of the whole answer, each row serialised once', () => {
    let rowsSerialised = 0;
    /** A row that counts how often it is serialised. */
    const counting = (id: string, n: number) =>
      deepFreeze({
        id,
        n,
        toJSON() {
          rowsSerialised++;
          return { id, n };
        },
      });
    const rows = [counting('a"', 1), counting('\u2028', 2)];
    const envelopes: [string, (answer: unknown) => string][] = [
      ['REST list', (a) => JSON.stringify({ code: '0', ...(a as object) })],
      ['REST array', (a) => JSON.stringify({ code: '0', data: a })],
      ['tRPC', (a) => JSON.stringify({ result: { data: a } })],
    ];
    for (const [name, serialise] of envelopes) {
      const bodyOf = serialisedOncePerFrozen();
      const answer = name === 'REST array' ? [...rows] : { data: [...rows], total: 2, current: 1, page_size: 10 };
      const whole = serialise(answer);
      rowsSerialised = 0;
      let envelopes = 0;
      const envelope = (a: unknown) => {
        envelopes++;
        return serialise(a);
      };
      assert.equal(bodyOf(answer, envelope), whole, name);
      assert.equal(bodyOf(answer, envelope), whole, name);
      assert.equal(envelopes, 2, `${name}: the rest of the answer, once per request`);
      assert.equal(rowsSerialised, 2, `${name}: each row once`);
      assert.equal(bodyOf({ data: [], total: 0 }, serialise), serialise({ data: [], total: 0 }), `${name}: no rows`);
      // A page of the same rows handed out again is one deep-frozen array (db/repositories/listed-tasks.ts).
      let joins = 0;
      /** A frozen page counting how often its rows are mapped to JSON (`map` is read only to join them). */
      const frozenPage = (...pageRows: object[]) =>
        deepFreeze(
          new Proxy(pageRows, {
            get: (target, key, receiver) => {
              if (key === 'map') joins++;
              return Reflect.get(target, key, receiver);
            },
          }),
        );
      const c = counting('c', 3);
      const pages = [frozenPage(c, counting('d', 4)), frozenPage(c, counting('e', 5))];
      const around = (page: object) =>
        name === 'REST array' ? page : { data: page, total: 2, current: 1, page_size: 10 };
      for (const page of pages) {
        const pageBody = serialise(around(page));
        joins = 0;
        assert.equal(bodyOf(around(page), serialise), pageBody, `${name}: a frozen page`);
        assert.equal(bodyOf(around(page), serialise), pageBody, `${name}: a frozen page again`);
        assert.equal(joins, 1, `${name}: a frozen page's rows joined once`);
      }
      assert.notEqual(bodyOf(around(pages[0]!), serialise), bodyOf(around(pages[1]!), serialise));
    }
  });
});
