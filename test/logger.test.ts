import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { execFileSync } from 'node:child_process';
import pino from 'pino';
import { createLogger, toLogfmt, unredacted, type LoggerOptions } from '../server/logger.ts';

/** A destination that collects everything written to it. */
function sink() {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  return { stream, text: () => chunks.join(''), lines: () => chunks.join('').split('\n').filter(Boolean) };
}

function tmp(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'console-logger-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function make(over: Partial<LoggerOptions> = {}) {
  const out = sink();
  const logger = createLogger({
    level: 'info',
    format: 'json',
    path: '',
    mode: 'release',
    destination: out.stream,
    ...over,
  });
  return { logger, out };
}

const SECRETS = { password: 'hunter2', req: { headers: { authorization: 'Bearer x', host: 'example.com' } } };

test('json: one parseable line per entry with level and msg', () => {
  const { logger, out } = make();
  logger.info({ user: 'ada', n: 1 }, 'hello world');
  logger.warn('careful');
  const lines = out.lines();
  assert.equal(lines.length, 2);
  const [first, second] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(first?.level, 30);
  assert.equal(first?.msg, 'hello world');
  assert.equal(first?.user, 'ada');
  assert.equal(typeof first?.time, 'number');
  assert.equal(second?.level, 40);
  assert.equal(second?.msg, 'careful');
});

test('json: errors keep pino serializer (type, message, stack)', () => {
  const { logger, out } = make();
  logger.error(new TypeError('boom'), 'failed');
  const entry = JSON.parse(out.lines()[0]!) as { err: { type: string; message: string; stack: string }; msg: string };
  assert.equal(entry.msg, 'failed');
  assert.equal(entry.err.type, 'TypeError');
  assert.equal(entry.err.message, 'boom');
  assert.match(entry.err.stack, /TypeError: boom\n\s+at /);
});

test('logfmt: level, ISO time, quoted msg, flattened keys', () => {
  const { logger, out } = make({ format: 'logfmt' });
  logger.info({ key: 'value', nested: { key: 1, deep: { ok: true } }, empty: '', nothing: null }, 'hello world');
  const lines = out.lines();
  assert.equal(lines.length, 1);
  assert.match(
    lines[0]!,
    /^level=info time=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z msg="hello world" key=value nested\.key=1 nested\.deep\.ok=true empty="" nothing=null$/,
  );
  assert.ok(!lines[0]!.includes('pid='));
  assert.ok(!lines[0]!.includes('hostname='));
});

test('logfmt: quoting and escaping keep one line per entry', () => {
  const { logger, out } = make({ format: 'logfmt' });
  logger.info(
    { q: 'say "hi"', eq: 'a=b', nl: 'two\nlines', bs: 'C:\\dir', plain: 'simple', arr: [1, 'x'] },
    'multi\nline "msg"',
  );
  logger.info('single');
  const text = out.text();
  assert.equal(text.split('\n').length, 3); // two entries + trailing newline
  const [line, second] = out.lines();
  assert.ok(line!.includes('msg="multi\\nline \\"msg\\""'), line);
  assert.ok(line!.includes('q="say \\"hi\\""'), line);
  assert.ok(line!.includes('eq="a=b"'), line);
  assert.ok(line!.includes('nl="two\\nlines"'), line);
  assert.ok(line!.includes('bs="C:\\\\dir"'), line);
  assert.ok(line!.includes(' plain=simple'), line);
  assert.ok(line!.includes('arr="[1,\\"x\\"]"'), line);
  assert.match(second!, /^level=info time=\S+ msg=single$/);
});

test('logfmt: errors as err.message/err.type without stack', () => {
  const { logger, out } = make({ format: 'logfmt' });
  logger.error(new RangeError('out of range'), 'request failed');
  const lines = out.lines();
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /^level=error .* msg="request failed" err\.type=RangeError err\.message="out of range"$/);
  assert.ok(!lines[0]!.includes('stack'));
  assert.ok(!lines[0]!.includes(' at '));
});

test('toLogfmt passes through non-JSON input unchanged', () => {
  assert.equal(toLogfmt('not json'), 'not json\n');
});

test('level filtering: debug hidden at info, shown at debug', () => {
  const info = make({ level: 'info' });
  info.logger.debug('hidden');
  info.logger.info('shown');
  assert.deepEqual(
    info.out.lines().map((l) => (JSON.parse(l) as { msg: string }).msg),
    ['shown'],
  );

  const warn = make({ level: 'warn', format: 'logfmt' });
  warn.logger.info('hidden');
  warn.logger.error('bad');
  assert.equal(warn.out.lines().length, 1);
  assert.match(warn.out.lines()[0]!, /^level=error /);

  const debug = make({ level: 'debug' });
  debug.logger.debug('visible');
  assert.equal((JSON.parse(debug.out.lines()[0]!) as { level: number }).level, 20);
});

test('debug mode: human-readable, not JSON, no colours on a non-TTY', () => {
  const { logger, out } = make({ mode: 'debug', level: 'debug' });
  logger.info({ user: 'ada' }, 'hello pretty');
  logger.debug('dbg line');
  const text = out.text();
  assert.ok(text.includes('hello pretty'));
  assert.ok(text.includes('INFO'));
  assert.ok(text.includes('DEBUG'));
  assert.ok(text.includes('ada'));
  assert.ok(!text.includes('\u001b['), 'no ANSI colour codes');
  for (const l of out.lines()) assert.throws(() => JSON.parse(l));
});

test('path: appends to <path>/console.log in the configured format, creating the folder', (t) => {
  const dir = join(tmp(t), 'nested', 'logs');
  const { logger, out } = make({ path: dir });
  logger.info({ a: 1 }, 'to file');
  const file = join(dir, 'console.log');
  const fileLines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
  assert.equal(fileLines.length, 1);
  assert.equal((JSON.parse(fileLines[0]!) as { msg: string }).msg, 'to file');
  assert.equal(out.lines().length, 1); // destination still gets it

  // a second logger appends rather than truncates
  make({ path: dir, format: 'logfmt' }).logger.warn('second');
  const after = readFileSync(file, 'utf8').split('\n').filter(Boolean);
  assert.equal(after.length, 2);
  assert.match(after[1]!, /^level=warn time=\S+ msg=second$/);
});

test('path in debug mode: pretty on destination, plain format in the file', (t) => {
  const dir = tmp(t);
  const { logger, out } = make({ path: dir, mode: 'debug', format: 'logfmt' });
  logger.info('both sinks');
  assert.throws(() => JSON.parse(out.lines()[0]!));
  assert.ok(!out.text().startsWith('level='));
  assert.match(readFileSync(join(dir, 'console.log'), 'utf8'), /^level=info time=\S+ msg="both sinks"\n$/);
});

test('empty path writes no file', (t) => {
  const dir = tmp(t);
  const cwd = process.cwd();
  process.chdir(dir);
  try {
    make({ path: '' }).logger.info('nowhere');
  } finally {
    process.chdir(cwd);
  }
  assert.deepEqual(readdirSync(dir), []);
  assert.ok(!existsSync(join(dir, 'console.log')));
});

test('redaction: secrets never reach any sink in any format', (t) => {
  for (const mode of ['release', 'debug'] as const) {
    for (const format of ['json', 'logfmt'] as const) {
      const dir = tmp(t);
      const { logger, out } = make({ mode, format, path: dir, level: 'debug' });
      logger.info(SECRETS, 'login');
      logger.debug(
        { token: 'tok-123', user: { password: 'pw-456', secret: 'sec-789' }, headers: { authorization: 'Basic abc' } },
        'more',
      );
      const texts = [out.text(), readFileSync(join(dir, 'console.log'), 'utf8')];
      for (const text of texts) {
        for (const secret of ['hunter2', 'Bearer x', 'tok-123', 'pw-456', 'sec-789', 'Basic abc']) {
          assert.ok(!text.includes(secret), `${mode}/${format} leaked ${secret}: ${text}`);
        }
        assert.ok(text.includes('***'), `${mode}/${format} shows the censor`);
        assert.ok(text.includes('example.com'), `${mode}/${format} keeps non-secret fields`);
      }
    }
  }
});

test('child loggers inherit format and redaction', () => {
  const { logger, out } = make({ format: 'logfmt' });
  logger.child({ component: 'http' }).info({ authorization: 'Bearer y' }, 'child');
  const line = out.lines()[0]!;
  assert.match(line, /msg=child component=http authorization=\*\*\*$/);
});

/** Runs `body` in a child process with a release logger writing to stdout and to `dir` (its batched sinks). */
function runLogging(dir: string, body: string): { stdout: string; file: () => string } {
  const script = `import { createLogger } from ${JSON.stringify(new URL('../server/logger.ts', import.meta.url).href)};
const logger = createLogger({ level: 'info', format: 'json', path: ${JSON.stringify(dir)}, mode: 'release' });
${body}`;
  const stdout = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  return { stdout, file: () => readFileSync(join(dir, 'console.log'), 'utf8') };
}

test('release sinks gather lines, write them within 200 ms, and write what is left when the process exits', (t) => {
  const dir = tmp(t);
  const seen = runLogging(
    dir,
    `logger.info('first');
const { statSync } = await import('node:fs');
const size = () => { try { return statSync(${JSON.stringify(join(dir, 'console.log'))}).size; } catch { return 0; } };
const before = size();
await new Promise((r) => setTimeout(r, 400));
logger.info({ before, after: size() }, 'second');
process.exit(0);`,
  );
  const lines = seen
    .file()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { msg: string; before?: number; after?: number });
  assert.deepEqual(
    lines.map((l) => l.msg),
    ['first', 'second'],
    'both lines reach the file, the last one written at exit',
  );
  assert.equal(lines[1]!.before, 0, 'a line is not written at once');
  assert.ok(lines[1]!.after! > 0, 'but within the flush interval');
  assert.deepEqual(
    seen.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { msg: string }).msg),
    ['first', 'second'],
    'stdout too',
  );
});

test('the unredacted twin writes to the same sinks, skips the redaction pass, and children find it', () => {
  const { logger, out } = make();
  const child = logger.child({ component: 'http' });
  assert.notEqual(unredacted(child), child, 'a child of a createLogger logger finds the twin');
  unredacted(child).info({ route: '/api/auth/me', password: 'not-a-secret-here' }, 'request');
  child.info({ password: 'hunter2' }, 'ordinary');
  const [twin, ordinary] = out.lines().map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(twin?.route, '/api/auth/me');
  assert.equal(twin?.password, 'not-a-secret-here', 'no redaction pass on the twin');
  assert.equal(ordinary?.password, '***', 'the logger itself still redacts');
  const plain = pino({ level: 'silent' });
  assert.equal(unredacted(plain), plain, 'a logger made elsewhere is answered as it is');
});

test('a process that exits at once still writes its lines, to the file and to stdout', (t) => {
  const dir = tmp(t);
  const seen = runLogging(dir, `logger.info('at once');\nprocess.exit(0);`);
  assert.equal((JSON.parse(seen.file()) as { msg: string }).msg, 'at once');
  assert.equal((JSON.parse(seen.stdout) as { msg: string }).msg, 'at once');
});
