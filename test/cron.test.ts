import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { nextCronFire } from '../engine/cron.ts';

/**
 * Runs `body` in a fresh node (luxon untouched by other tests) where every Intl.DateTimeFormat made is counted,
 * and returns what the body prints as JSON.
 */
function inFreshProcess(body: string): { formats: number; [key: string]: unknown } {
  const script = `
    let formats = 0;
    const Original = Intl.DateTimeFormat;
    Intl.DateTimeFormat = new Proxy(Original, {
      construct: (target, args) => (formats++, Reflect.construct(target, args)),
      apply: (target, self, args) => (formats++, Reflect.apply(target, self, args)),
    });
    const { createRequire } = await import('node:module');
    const { nextCronFire } = await import(${JSON.stringify(new URL('../engine/cron.ts', import.meta.url).href)});
    const luxon = createRequire(createRequire(import.meta.url).resolve('cron-parser'))('luxon');
    const out = await (async () => { ${body} })();
    console.log(JSON.stringify({ formats, ...out }));`;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(child.status, 0, child.stderr);
  return JSON.parse(child.stdout.trim().split('\n').pop()!) as { formats: number };
}

describe('cron fires', () => {
  test('the next fire after a time, in UTC and in a named zone', () => {
    const after = new Date('2026-03-28T12:00:00Z');
    assert.equal(nextCronFire('0 0 * * *', 'UTC', after).toISOString(), '2026-03-29T00:00:00.000Z');
    assert.equal(
      nextCronFire('*/15 * * * *', 'UTC', new Date('2026-03-28T12:00:00Z')).toISOString(),
      '2026-03-28T12:15:00.000Z',
    );
    assert.equal(nextCronFire('30 * * * * *', 'UTC', after).toISOString(), '2026-03-28T12:00:30.000Z');
    // 03:00 in Berlin on the day clocks go forward (CEST, UTC+2).
    assert.equal(
      nextCronFire('0 3 * * *', 'Europe/Berlin', new Date('2026-03-29T00:00:00Z')).toISOString(),
      '2026-03-29T01:00:00.000Z',
    );
  });

  test('a UTC schedule asks ICU for no locale, and leaves luxon settings as they were', () => {
    const untouched = inFreshProcess(`
      const fire = nextCronFire('0 0 * * *', 'UTC', new Date('2026-01-01T12:00:00Z')).toISOString();
      return { fire, locale: luxon.Settings.defaultLocale ?? null };`);
    assert.deepEqual(untouched, { formats: 0, fire: '2026-01-02T00:00:00.000Z', locale: null });

    const chosen = inFreshProcess(`
      luxon.Settings.defaultLocale = 'de-DE';
      nextCronFire('0 0 * * *', 'UTC', new Date());
      return { locale: luxon.Settings.defaultLocale };`);
    assert.equal(chosen.locale, 'de-DE');
  });
});
