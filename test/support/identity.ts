import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { ConsoleConfigInput } from '../../server/config/schema.ts';
import { startConsole, type Lane, type Reply, type TestConsole } from './harness.ts';

export const PASSWORD = 'password-1';

/** A well-formed UUID that names nothing. */
export const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

/** A name no other test of the same console uses: letters and digits only, so it is a valid username. */
export const unique = (prefix = 'u') => `${prefix}${randomBytes(4).toString('hex')}`;

/** A console for one describe block, with an administrator's token. */
export async function startWithAdmin(
  lane: Lane,
  overrides: ConsoleConfigInput = {},
): Promise<{ t: TestConsole; admin: string }> {
  const t = await startConsole(lane, overrides);
  return { t, admin: await t.login() };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Asserts an error envelope: status, code, and (when given) that the message matches. */
export function assertError(res: Reply, status: number, code: string, err?: RegExp | string): void {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status} ${res.text}`);
  assert.equal(res.body?.code, code, res.text);
  assert.equal(typeof res.body.err, 'string');
  if (typeof err === 'string') assert.equal(res.body.err, err);
  else if (err) assert.match(res.body.err, err);
}

/** Asserts a success envelope and returns its data. */
export function ok<T = any>(res: Reply, status = 200): T {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.code, '0', res.text);
  return res.body.data as T;
}

export async function createUser(t: TestConsole, token: string, body: Record<string, unknown> = {}): Promise<any> {
  const name = (body.username as string | undefined) ?? unique();
  const res = await t.request('POST', '/api/users', {
    token,
    body: { username: name, email: `${name}@example.test`, password: PASSWORD, ...body },
  });
  return ok(res, 201);
}

export async function createRole(
  t: TestConsole,
  token: string,
  permissions: string[],
  name = unique('role'),
): Promise<any> {
  return ok(await t.request('POST', '/api/roles', { token, body: { name, description: '', permissions } }), 201);
}

export async function putSettings(t: TestConsole, token: string, values: Record<string, string>): Promise<void> {
  ok(await t.request('PUT', '/api/system/settings', { token, body: values }));
}

/** Writes a column of one row straight into the database (to move a time into the past, for example). */
export async function setColumn(
  t: TestConsole,
  table: 'users' | 'sessions',
  id: string,
  column: string,
  value: Date | null,
): Promise<void> {
  const { knex, t: tables, dialect } = t.c.db;
  await knex(tables[table])
    .where('id', id)
    .update({ [column]: value === null ? null : dialect.toDbTime(value) });
}

/**
 * The list rules every list endpoint shares (README "API overview"): defaults 1 and 10, page_size 1–100, current ≥ 1,
 * anything else (out of range, not a whole number) → 400 E4001 naming the field.
 */
export async function assertPaginationRules(t: TestConsole, token: string, path: string): Promise<void> {
  const plain = await t.request('GET', path, { token });
  assert.equal(plain.status, 200, plain.text);
  assert.deepEqual(Object.keys(plain.body).sort(), ['code', 'current', 'data', 'page_size', 'total']);
  assert.equal(plain.body.current, 1);
  assert.equal(plain.body.page_size, 10);
  assert.ok(Array.isArray(plain.body.data) && plain.body.data.length <= 10);
  assert.equal(ok(await t.request('GET', `${path}?page_size=100`, { token })).length, Math.min(plain.body.total, 100));
  for (const [query, field] of [
    ['page_size=0', 'page_size'],
    ['page_size=101', 'page_size'],
    ['page_size=abc', 'page_size'],
    ['page_size=2.5', 'page_size'],
    ['page_size=', 'page_size'],
    ['current=0', 'current'],
    ['current=-1', 'current'],
    ['current=x1', 'current'],
  ] as const) {
    assertError(await t.request('GET', `${path}?${query}`, { token }), 400, 'E4001', new RegExp(`^${field}: `));
  }
}
