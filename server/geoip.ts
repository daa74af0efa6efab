// GeoIP lookups backed by a MaxMind DB file (GeoLite2-City / GeoLite2-Country / GeoIP2-*).
import type { CityResponse, Reader } from 'maxmind';

export interface GeoInfo {
  /** ISO 3166-1 alpha-2 country code, e.g. "DE". */
  country?: string;
  /** English city name, e.g. "Berlin". */
  city?: string;
}

/** Never throws: private, unknown and malformed addresses give `undefined`. */
export type GeoLookup = (ip: string) => GeoInfo | undefined;

/**
 * Opens the database at `path` (config `server.geoip_db_path`).
 * An empty path disables GeoIP and resolves to `undefined`; a missing or invalid file
 * rejects with `server.geoip_db_path: cannot open <path> (<reason>)`.
 */
export async function openGeoIp(path: string): Promise<GeoLookup | undefined> {
  if (!path) return undefined;
  // Loaded only when a database is configured.
  const { default: maxmind } = await import('maxmind');
  let reader: Reader<CityResponse>;
  try {
    reader = await maxmind.open<CityResponse>(path);
    const { nodeCount, ipVersion } = reader.metadata;
    // Garbage files sometimes "parse" into nonsense metadata instead of throwing.
    if (!Number.isInteger(nodeCount) || nodeCount < 1 || (ipVersion !== 4 && ipVersion !== 6)) {
      throw new Error('bad metadata');
    }
  } catch (err) {
    throw new Error(`server.geoip_db_path: cannot open ${path} (${reason(err)})`, { cause: err });
  }
  return (ip) => lookup(reader, ip, maxmind.validate);
}

function lookup(reader: Reader<CityResponse>, raw: string, validate: (ip: string) => boolean): GeoInfo | undefined {
  if (typeof raw !== 'string') return undefined;
  let ip = raw.trim();
  // IPv4-mapped IPv6 ("::ffff:1.2.3.4", as seen on dual-stack sockets) -> plain IPv4.
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (mapped) ip = mapped[1]!;
  if (!validate(ip)) return undefined;
  try {
    const rec = reader.get(ip);
    if (!rec) return undefined;
    const info: GeoInfo = {};
    const country = rec.country?.iso_code;
    const city = rec.city?.names?.en;
    if (typeof country === 'string' && country) info.country = country;
    if (typeof city === 'string' && city) info.city = city;
    return info.country || info.city ? info : undefined;
  } catch {
    return undefined;
  }
}

function reason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  switch (code) {
    case 'ENOENT':
      return 'file not found';
    case 'EISDIR':
      return 'is a directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
  }
  if (code) return code;
  const msg = err instanceof Error ? err.message : String(err);
  if (/gzip/i.test(msg)) return 'gzip-compressed; extract the .mmdb file first';
  return 'not a valid MaxMind DB file';
}
