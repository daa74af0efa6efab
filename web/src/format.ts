// One formatter per language: building one is far dearer than formatting, and a list formats hundreds of times.
const formatters = new Map<string, Intl.DateTimeFormat>();

/** A timestamp of the API in the UI's language, or a dash. */
export function formatTime(iso: string | null, language: string): string {
  if (!iso) return '—';
  let format = formatters.get(language);
  if (!format)
    formatters.set(language, (format = new Intl.DateTimeFormat(language, { dateStyle: 'medium', timeStyle: 'short' })));
  return format.format(new Date(iso));
}
