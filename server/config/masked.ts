import { SECRET_KEY } from './load.ts';
import type { ConsoleConfig } from './schema.ts';

const MASK = '***';

/**
 * The configuration with every secret replaced by `***`: keys named like one (passwords, tokens, secrets, the
 * encryption key) and every exporter header, which usually carries an API key. Unset secrets stay unset, so
 * the output still tells whether one is given.
 */
export function maskedConfig(config: ConsoleConfig): unknown {
  return mask(config, false);
}

function mask(value: unknown, secret: boolean): unknown {
  if (Array.isArray(value)) return value.map((v) => mask(v, secret));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, mask(v, secret || k === 'header' || SECRET_KEY.test(k))]),
    );
  return secret && value !== undefined && value !== '' ? MASK : value;
}
