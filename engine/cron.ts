import { createRequire } from 'node:module';
import { CronExpressionParser } from 'cron-parser';

interface LuxonSettings {
  defaultLocale: string | undefined;
}

// The luxon that cron-parser itself requires (its CommonJS build: luxon's ES build would be a second copy).
const luxon = createRequire(createRequire(import.meta.url).resolve('cron-parser'))('luxon') as {
  Settings: LuxonSettings;
};

/**
 * The first fire of `spec`, read in `timezone`, strictly after `after`.
 *
 * Without a default locale, luxon asks ICU for the system's locale on its first date, which pages ~7 MB of ICU
 * data into the process for good (the service's idle memory is 120 MB all told). Cron arithmetic reads no
 * locale, so a default is set only while the synchronous computation runs and the previous one put back, which
 * leaves an embedding application's own luxon settings as they were. An IANA zone other than UTC still needs ICU.
 */
export function nextCronFire(spec: string, timezone: string, after: Date): Date {
  const previous = luxon.Settings.defaultLocale;
  luxon.Settings.defaultLocale = previous ?? 'en-US';
  try {
    return CronExpressionParser.parse(spec, { currentDate: after, tz: timezone }).next().toDate();
  } finally {
    luxon.Settings.defaultLocale = previous;
  }
}
