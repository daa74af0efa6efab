import { z } from 'zod';
import { deepFreeze, isDeepFrozen } from '../../lib/deep-freeze.ts';
import { all, andThen, type MaybePromise } from '../../lib/maybe-async.ts';

// The rule of frozen answers. A service deep-freezes (lib/deep-freeze.ts) an answer it keeps and hands out again,
// a cached page or the caller's own record: such a value cannot change while it lives. So the work a transport
// does on an answer is done once per frozen answer instead of once per request: its output validation, whose
// result is frozen in turn, and each route's serialised body of it. The same holds for the rows of an answer
// made afresh from rows kept between requests (a task page read again, db/repositories/listed-tasks.ts): each
// frozen row is validated and serialised once, the rest of the answer each time. A deep-frozen array of such rows
// (the same page handed out again) has its validated rows and its rows' joined JSON kept as well, built from the
// rows' own. Any other answer is worked on each time.

/** An answer's rows: an array answer is its rows, a list page holds them in `data`. */
function rowsOf(answer: unknown): unknown[] | undefined {
  if (Array.isArray(answer)) return answer;
  const data = (answer as { data?: unknown } | null)?.data;
  return Array.isArray(data) ? data : undefined;
}

/** The rows of an answer that is not frozen itself but whose rows all are; undefined for any other answer. */
function frozenRowsOf(answer: unknown): unknown[] | undefined {
  const rows = rowsOf(answer);
  return rows && rows.length > 0 && rows.every(isDeepFrozen) ? rows : undefined;
}

/** The answer with `rows` in place of its own. */
function withRows(answer: unknown, rows: unknown[]): unknown {
  return Array.isArray(answer) ? rows : Object.assign({}, answer, { data: rows });
}

/**
 * The schema of an output's rows (an array's elements, a list page's `data`), where it has rows and checks
 * nothing of them together (a length or a refinement of the array, or of the page around it): rows validated
 * one by one must be all it checks.
 */
export function rowSchemaOf(output: unknown): z.ZodType | undefined {
  if (output instanceof z.ZodObject && output._zod.def.checks?.length) return undefined;
  const rows = output instanceof z.ZodObject ? output.shape.data : output;
  return rows instanceof z.ZodArray && !rows._zod.def.checks?.length ? (rows.element as z.ZodType) : undefined;
}

/** `run(value)`, kept per frozen value once it has passed (a failure is thrown again by the next request). */
function keptPerValue(run: (value: unknown) => MaybePromise<unknown>): (value: object) => MaybePromise<unknown> {
  const kept = new WeakMap<object, unknown>();
  return (value) => {
    const validated = kept.get(value);
    if (validated !== undefined) return validated;
    return andThen(run(value), (parsed) => {
      kept.set(value, deepFreeze(parsed));
      return parsed;
    });
  };
}

/**
 * The procedure's output validation, run once per frozen answer; given its rows' validation (`validateRow`),
 * once per frozen row of an answer made afresh, the rest of that answer each time. A frozen array of frozen rows
 * is validated row by row too, so a page that differs from the last in one row costs one row's validation.
 */
export function validatedOncePerFrozen(
  validate: (data: unknown) => MaybePromise<unknown>,
  validateRow?: (row: unknown) => MaybePromise<unknown>,
): (data: unknown) => MaybePromise<unknown> {
  const answer = keptPerValue(validate);
  const row = validateRow && keptPerValue(validateRow);
  const eachRow = (rows: unknown[]) => all(rows.map((r) => row!(r as object)));
  const frozenRows = keptPerValue((rows) => eachRow(rows as unknown[]));
  return (data) => {
    // A frozen array of frozen rows (a page handed out again) is its rows: validated from their own kept results.
    if (isDeepFrozen(data)) return row && Array.isArray(data) && frozenRowsOf(data) ? frozenRows(data) : answer(data);
    const rows = row && frozenRowsOf(data);
    if (!rows) return validate(data);
    return andThen(validate(withRows(data, [])), (rest) =>
      andThen(isDeepFrozen(rows) ? frozenRows(rows) : eachRow(rows), (valid) => withRows(rest, valid as unknown[])),
    );
  };
}

/**
 * Where the rows go in a body serialised with none: the first empty `data` array. REST's envelope holds the rows
 * in its `data`, tRPC's in `result.data` (an array answer) or `result.data.data` (a list page), the first key
 * that is an empty array either way. Frozen rows are the task lists' kept rows (db/repositories/listed-tasks.ts),
 * plain objects of strings, numbers and nulls, whose JSON.stringify is what the routes' serializers write.
 */
const NO_ROWS = '"data":[]';

/** A string made once per object (by the `make` of its first call) and kept while the object lives. */
function oncePerObject(): (value: object, make: (value: object) => string) => string {
  const kept = new WeakMap<object, string>();
  return (value, make) => {
    let made = kept.get(value);
    if (made === undefined) kept.set(value, (made = make(value)));
    return made;
  };
}

/**
 * A route's body of an answer, `serialise(answer)` being the whole body: made once per frozen answer; for an
 * answer with frozen rows, `serialise` runs on the answer without them and each row's JSON, made once, is put in
 * (the rows of a frozen array joined once).
 */
export function serialisedOncePerFrozen(): (data: unknown, serialise: (answer: unknown) => string) => string {
  const answerBody = oncePerObject();
  const rowBody = oncePerObject();
  const rowsBody = oncePerObject();
  const joined = (rows: object) => (rows as unknown[]).map((r) => rowBody(r as object, JSON.stringify)).join(',');
  /** The body with its frozen rows' JSON put in, or undefined where the answer has none or no place for them. */
  const spliced = (data: unknown, serialise: (answer: unknown) => string): string | undefined => {
    const rows = frozenRowsOf(data);
    if (!rows) return undefined;
    const empty = serialise(withRows(data, []));
    const found = empty.indexOf(NO_ROWS);
    if (found < 0) return undefined;
    const at = found + NO_ROWS.length - 1;
    const bodies = isDeepFrozen(rows) ? rowsBody(rows, joined) : joined(rows);
    return `${empty.slice(0, at)}${bodies}${empty.slice(at)}`;
  };
  return (data, serialise) => {
    if (isDeepFrozen(data)) return answerBody(data, (d) => spliced(d, serialise) ?? serialise(d));
    return spliced(data, serialise) ?? serialise(data);
  };
}
