const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;

/** Parses a Go-style duration (`500ms`, `10s`, `1m30s`, `24h`) into milliseconds; undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const s = text.trim();
  if (s === '0') return 0;
  if (!s) return undefined;
  PART.lastIndex = 0;
  let total = 0;
  let consumed = 0;
  for (let m = PART.exec(s); m; m = PART.exec(s)) {
    total += Number(m[1]) * (UNIT_MS[m[2]!] ?? 0);
    consumed = PART.lastIndex;
  }
  return consumed === s.length ? total : undefined;
}
