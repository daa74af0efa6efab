import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ERROR_CODES, serviceDocument } from '../server/http/openapi.ts';
import { USER_EXPORT_CONTENT_TYPE } from '../routers/user-export/runner.ts';
import { operations, resolveRef, type Operation } from './support/openapi-doc.ts';

/**
 * The generated document (what `npm run openapi` prints and the build writes to dist/openapi.json), linted by
 * the pinned Redocly CLI (recommended rules, redocly.yaml) and Spectral (spectral:oas, .spectral.yaml), and
 * checked for what a client generator needs from it. No database: the document comes from router meta.
 */

type Json = Record<string, any>;

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);

/** A package's own bin script, run with this Node (no npx: nothing is fetched). */
function binOf(pkg: string, name: string): string {
  const manifest = require.resolve(`${pkg}/package.json`, { paths: [ROOT] });
  const bin = JSON.parse(readFileSync(manifest, 'utf8')).bin as Record<string, string>;
  return join(dirname(manifest), bin[name]!);
}

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs a CLI offline: no telemetry, no update check, and none of this process's environment (test database URLs). */
function run(script: string, args: string[], home: string): Promise<Run> {
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: home,
    NO_COLOR: '1',
    REDOCLY_TELEMETRY: 'off',
    REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
  };
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [script, ...args],
      { cwd: ROOT, env, timeout: 120_000, maxBuffer: 16 << 20 },
      (error, stdout, stderr) => {
        resolve({ status: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

/** Every schema reachable from `schema`, with where it sits (`$ref`s followed once each). */
function* schemasIn(doc: Json, schema: Json, where: string, seen = new Set<string>()): Generator<[string, Json]> {
  if (!schema || typeof schema !== 'object') return;
  if (typeof schema.$ref === 'string') {
    if (seen.has(schema.$ref)) return;
    seen.add(schema.$ref);
    yield* schemasIn(doc, resolveRef(doc, schema), schema.$ref.replace('#/components/schemas/', '#'), seen);
    return;
  }
  yield [where, schema];
  for (const [name, property] of Object.entries((schema.properties ?? {}) as Json))
    yield* schemasIn(doc, property, `${where}.${name}`, seen);
  if (schema.items) yield* schemasIn(doc, schema.items, `${where}[]`, seen);
  for (const k of ['anyOf', 'oneOf', 'allOf'])
    for (const member of (schema[k] ?? []) as Json[]) yield* schemasIn(doc, member, where, seen);
}

/** Each schema's type and format, through a nullable `anyOf`. */
const formatOf = (schema: Json): string | undefined =>
  schema.format ?? (schema.anyOf as Json[] | undefined)?.find((s) => s.type === 'string')?.format;
const isString = (schema: Json) =>
  schema.type === 'string' ||
  (Array.isArray(schema.type) && schema.type.includes('string')) ||
  (schema.anyOf as Json[] | undefined)?.some((s) => s.type === 'string');

/**
 * Identifiers that are not UUIDs: a schedule is named in code, a log backend by its kind, an audit record's
 * resource may be a setting key, a trace id is W3C's 32 hex digits and a file key random base64url.
 */
const NOT_UUID = new Set([
  '#Error.trace_id',
  '#TaskSchedule.id',
  '#LogStorageBackend.id',
  '#Task.cron_schedule_id',
  '#AuditLog.resource_id',
  'param id of /task-schedules/{id}/toggle',
  'param id of /task-schedules/{id}/trigger',
  'param fileKey of /files/{fileKey}',
  // Event ids are numbers the events log hands out.
  'param last_event_id of /tasks/events',
  'GET /tasks/events 200.id',
]);
/** Fields the server leaves out in some answers. */
const SOMETIMES_SENT = new Set(['#Error.trace_id']);

describe('generated OpenAPI document', () => {
  let doc: Json;
  let ops: Operation[];
  let dir: string;
  let file: string;

  before(() => {
    doc = serviceDocument('0.0.0', '/api');
    ops = operations(doc);
    dir = mkdtempSync(join(tmpdir(), 'console-openapi-'));
    file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc, null, 2));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('Redocly lint (recommended rules, redocly.yaml): no errors, no warnings', async () => {
    const res = await run(
      binOf('@redocly/cli', 'redocly'),
      ['lint', '--config', join(ROOT, 'redocly.yaml'), '--format', 'json', file],
      dir,
    );
    const report = JSON.parse(res.stdout) as {
      totals: { errors: number; warnings: number };
      problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
    };
    const problems = report.problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
    assert.deepEqual(problems, []);
    assert.deepEqual(report.totals, { ...report.totals, errors: 0, warnings: 0 });
    assert.equal(res.status, 0, res.stderr);
  });

  test('Spectral lint (spectral:oas, .spectral.yaml): no errors, no warnings', async () => {
    const res = await run(
      binOf('@stoplight/spectral-cli', 'spectral'),
      [
        'lint',
        '--ruleset',
        join(ROOT, '.spectral.yaml'),
        '--format',
        'json',
        '--fail-severity',
        'warn',
        '--quiet',
        file,
      ],
      dir,
    );
    const results = JSON.parse(res.stdout || '[]') as {
      code: string;
      message: string;
      severity: number;
      path: string[];
    }[];
    // Severity 0 is an error, 1 a warning.
    const problems = results
      .filter((r) => r.severity <= 1)
      .map((r) => `${r.code}: ${r.message} at ${r.path.join('.')}`);
    assert.deepEqual(problems, []);
    assert.equal(res.status, 0, res.stderr);
  });

  test('every operation has a unique operationId, a description and tags that are described', () => {
    const tags = new Map((doc.tags as { name: string; description?: string }[]).map((t) => [t.name, t.description]));
    const ids = new Set<string>();
    for (const { key, op } of ops) {
      assert.match(op.operationId ?? '', /^[A-Za-z][\w-]*$/, `${key}: operationId`);
      assert.ok(!ids.has(op.operationId), `${key}: operationId ${op.operationId} is unique`);
      ids.add(op.operationId);
      assert.ok((op.description ?? '').length > 20, `${key}: description`);
      assert.ok(op.tags?.length > 0, `${key}: tags`);
      for (const tag of op.tags) assert.ok(tags.get(tag), `${key}: tag ${tag} is declared with a description`);
    }
    const used = new Set(ops.flatMap((o) => o.op.tags as string[]));
    assert.deepEqual(
      [...tags.keys()].filter((t) => !used.has(t)),
      [],
      'every declared tag is used',
    );
  });

  test("the error schema's code is an enum of the service's codes, as the README's table lists them", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const table = [...readme.matchAll(/^\| (E\d{4}) \| (\d{3}) \|/gm)].map((m) => ({
      code: m[1]!,
      status: Number(m[2]),
    }));
    assert.deepEqual(ERROR_CODES, table, 'lib/errors.ts and the README agree');
    const code = doc.components.schemas.Error.properties.code;
    assert.deepEqual(
      code.enum,
      table.map((e) => e.code),
    );
    // Every code is documented on the status it is answered with.
    for (const { code: c, status } of table) {
      assert.ok(
        ops.some(({ op }) => String(op.responses[status]?.description ?? '').includes(c)),
        `${c} is described on some ${status} response`,
      );
    }
  });

  test('ids carry format uuid, times format date-time', () => {
    const fields: [string, Json][] = [];
    for (const [name, schema] of Object.entries(doc.components.schemas as Json))
      fields.push(...schemasIn(doc, schema, `#${name}`));
    for (const { key, path, op } of ops) {
      for (const p of (op.parameters ?? []) as Json[]) {
        const param = resolveRef(doc, p);
        fields.push([`param ${param.name} of ${path}`, param.schema]);
      }
      const body = op.requestBody?.content?.['application/json']?.schema;
      if (body) fields.push(...schemasIn(doc, body, `${key} body`));
      for (const [status, response] of Object.entries(op.responses as Json)) {
        for (const content of Object.values((response.content ?? {}) as Json))
          fields.push(...schemasIn(doc, content.schema, `${key} ${status}`));
      }
    }
    let ids = 0;
    let times = 0;
    for (const [where, schema] of fields) {
      const name = /^param (\w+) of /.exec(where)?.[1] ?? /\.(\w+)(?:\[\])?$/.exec(where)?.[1] ?? '';
      if (!isString(schema) || NOT_UUID.has(where)) continue;
      if (/^(id|userId|\w+_ids?)$/.test(name)) {
        assert.equal(formatOf(schema), 'uuid', `${where} is a uuid`);
        ids++;
      }
      if (/(_at|_time|_run)$/.test(name)) {
        assert.equal(formatOf(schema), 'date-time', `${where} is a date-time`);
        times++;
      }
    }
    assert.ok(ids > 30 && times > 15, `${ids} ids and ${times} times checked`);
  });

  test('every field the server always sends is required', () => {
    for (const { key, op } of ops) {
      for (const [status, response] of Object.entries(op.responses as Json)) {
        const json = response.content?.['application/json']?.schema;
        if (!json) continue;
        for (const [where, schema] of schemasIn(doc, json, `${key} ${status}`)) {
          const optional = Object.keys((schema.properties ?? {}) as Json).filter(
            (p) => !(schema.required ?? []).includes(p) && !SOMETIMES_SENT.has(`${where}.${p}`),
          );
          assert.deepEqual(optional, [], `${where}: every property required`);
        }
      }
    }
  });

  test('every answer documents the X-RateLimit-* headers, a 429 its Retry-After', () => {
    for (const { key, op } of ops) {
      assert.ok(op.responses['429'], `${key}: 429`);
      for (const [status, response] of Object.entries(op.responses as Json)) {
        const headers = Object.fromEntries(
          Object.entries((response.headers ?? {}) as Json).map(([name, h]) => [name, resolveRef(doc, h)]),
        );
        for (const name of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'])
          assert.equal(headers[name]?.schema?.type, 'integer', `${key} ${status}: ${name}`);
        if (status === '429') assert.ok(headers['Retry-After'], `${key}: Retry-After`);
      }
    }
  });

  test('Idempotency-Key on every authenticated POST outside /auth, with the replay mark on its success', () => {
    const keyed = ops.filter(
      ({ method, path, op }) =>
        method === 'POST' && !path.startsWith('/auth/') && op.security.some((s: Json) => 'bearerAuth' in s),
    );
    assert.ok(keyed.length >= 8, `${keyed.length} keyed operations`);
    for (const { key, op } of ops) {
      const parameter = ((op.parameters ?? []) as Json[])
        .map((p) => resolveRef(doc, p))
        .find((p) => p.name === 'Idempotency-Key');
      const success = Object.entries(op.responses as Json).find(([s]) => s.startsWith('2'))?.[1];
      if (keyed.some((k) => k.key === key)) {
        assert.equal(parameter?.in, 'header', `${key}: Idempotency-Key`);
        assert.equal(parameter?.schema?.maxLength, 255, key);
        assert.ok(success?.headers?.['Idempotent-Replayed'], `${key}: Idempotent-Replayed`);
      } else assert.equal(parameter, undefined, `${key}: no Idempotency-Key`);
    }
  });

  test('the 429 answers name the quotas behind them where they apply', () => {
    const tooMany = (path: string, method: string) =>
      String(resolveRef(doc, doc.paths[path][method].responses['429']).description);
    for (const [path, method] of [
      ['/authorization/users/export', 'post'],
      ['/tasks/{id}/retry', 'post'],
    ] as const)
      assert.match(tooMany(path, method), /quota\.active_user_tasks/, `${method} ${path}`);
    assert.doesNotMatch(tooMany('/users', 'post'), /quota\.active_user_tasks/);
    for (const { key, method, path, op } of ops) {
      const keyed = method === 'POST' && !path.startsWith('/auth/') && op.security.some((s: Json) => 'bearerAuth' in s);
      const text = String(resolveRef(doc, op.responses['429']).description);
      assert.equal(/quota\.idempotency_keys_per_day/.test(text), keyed, `${key}: the Idempotency-Key quota`);
    }
    assert.match(String(doc.components.parameters.IdempotencyKey.description), /quota\.idempotency_keys_per_day/);
  });

  test('the file download documents the content types it sends', () => {
    const content = doc.paths['/files/{fileKey}'].get.responses['200'].content as Json;
    assert.deepEqual(Object.keys(content).sort(), [USER_EXPORT_CONTENT_TYPE, 'application/json'].sort());
  });
});
