/** A timestamp of the API in the UI's language, or a dash. */
export const formatTime = (iso: string | null, language: string): string =>
  iso ? new Date(iso).toLocaleString(language, { dateStyle: 'medium', timeStyle: 'short' }) : '—';
