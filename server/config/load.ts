import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { configSchema, DRIVER_DEFAULTS, type ConsoleConfig, type ConsoleConfigInput } from './schema.ts';

export class ConfigError extends Error {}

export interface LoadOptions {
  /** Values given in code by an embedding application; they rank with the file. */
  config?: ConsoleConfigInput;
  /** YAML file; else `./config.yaml` when present. `--config` in argv wins. */
  configFile?: string;
  env?: Record<string, string | undefined>;
  argv?: string[];
}

type Tree = Record<string, unknown>;

/** The schema one wrapper down (a default, an optional marker, a preprocess or transform step), or undefined. */
export function wrapped(s: z.ZodType): z.ZodType | undefined {
  if (s instanceof z.ZodDefault || s instanceof z.ZodPrefault || s instanceof z.ZodOptional)
    return s.def.innerType as z.ZodType;
  // A preprocess step (`pipe(transform, schema)`) keeps the shape in its output; a transform keeps it in its input.
  if (s instanceof z.ZodPipe) return (s.def.in instanceof z.ZodTransform ? s.def.out : s.def.in) as z.ZodType;
  return undefined;
}

/** The schema under every wrapper: the one that gives the key its shape. */
export function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (let inner = wrapped(s); inner; inner = wrapped(s)) s = inner;
  return s;
}

interface KeyInfo {
  path: string[];
  /** Lists, maps and nested objects are given as JSON in a variable or flag. */
  json: boolean;
}

/** Every settable key path, read from the schema so that keys containing `_` map unambiguously. */
function keyPaths(schema: z.ZodType, prefix: string[] = []): KeyInfo[] {
  const s = unwrap(schema);
  if (s instanceof z.ZodObject) {
    const own = prefix.length > 1 ? [{ path: prefix, json: true }] : [];
    return [...own, ...Object.entries(s.shape).flatMap(([k, v]) => keyPaths(v as z.ZodType, [...prefix, k]))];
  }
  const json = s instanceof z.ZodArray || s instanceof z.ZodRecord;
  return [{ path: prefix, json }];
}

const KEYS = keyPaths(configSchema);
const KEY_BY_ENV = new Map(KEYS.map((k) => [k.path.join('_').toUpperCase(), k]));
const KEY_BY_FLAG = new Map(KEYS.map((k) => [k.path.join('.'), k]));

function setPath(tree: Tree, path: string[], value: unknown): void {
  let node = tree;
  for (const part of path.slice(0, -1)) {
    const next = node[part];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[part] = {};
    node = node[part] as Tree;
  }
  node[path[path.length - 1]!] = value;
}

function deepMerge(base: Tree, over: Tree): Tree {
  const out: Tree = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    const bothObjects =
      typeof v === 'object' && v && !Array.isArray(v) && typeof b === 'object' && b && !Array.isArray(b);
    out[k] = bothObjects ? deepMerge(b as Tree, v as Tree) : v;
  }
  return out;
}

function parseValue(key: KeyInfo, raw: string, source: string): unknown {
  if (!key.json) return raw;
  try {
    return JSON.parse(raw);
  } catch {
    throw new ConfigError(`config: ${key.path.join('.')}: ${source} must hold JSON`);
  }
}

function fromEnv(env: Record<string, string | undefined>): Tree {
  const tree: Tree = {};
  // Object keys first so that a more specific variable (TRACING_HTTP_RETRY_ENABLED) wins over the JSON block.
  const names = Object.keys(env)
    .filter((n) => KEY_BY_ENV.has(n) && env[n] !== undefined && env[n] !== '')
    .sort((a, b) => a.length - b.length);
  for (const name of names) {
    const key = KEY_BY_ENV.get(name)!;
    setPath(tree, key.path, parseValue(key, env[name]!, `variable ${name}`));
  }
  return tree;
}

interface ParsedArgs {
  tree: Tree;
  configFile?: string;
}

function fromArgv(argv: string[]): ParsedArgs {
  const tree: Tree = {};
  let configFile: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) throw new ConfigError(`config: unexpected argument "${arg}"`);
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
    if (value === undefined) throw new ConfigError(`config: flag --${name} needs a value`);
    if (name === 'config') {
      configFile = value;
      continue;
    }
    const key = KEY_BY_FLAG.get(name);
    if (!key) throw new ConfigError(`config: unknown flag --${name}`);
    setPath(tree, key.path, parseValue(key, value, `flag --${name}`));
  }
  return { tree, configFile };
}

function fromFile(path: string | undefined, required: boolean): Tree {
  if (!path || (!required && !existsSync(path))) return {};
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new ConfigError(`config: cannot read config file ${path}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new ConfigError(`config: ${path} is not valid YAML (${(e as Error).message.split('\n')[0]})`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc))
    throw new ConfigError(`config: ${path} must hold a mapping of sections`);
  return doc as Tree;
}

/** Keys whose values a start-up error must not repeat (they end up in terminals and CI logs). */
export const SECRET_KEY = /secret|password|encrypt_key|token/;

function describe(issue: z.core.$ZodIssue, input: Tree): string {
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => [...path, k].join('.'));
    return `config: unknown key ${keys.join(', ')}`;
  }
  let given: unknown = input;
  for (const p of path) given = (given as Tree | undefined)?.[p];
  const secret = SECRET_KEY.test(path[path.length - 1] ?? '');
  const shown = given === undefined || typeof given === 'object' || secret ? '' : ` (got "${String(given)}")`;
  return `config: ${path.join('.') || '(root)'}: ${allowed(issue)}${shown}`;
}

/** What a key accepts, in words; zod's own texts ("expected number, received NaN") say less. */
function allowed(issue: z.core.$ZodIssue): string {
  if (!issue.message.startsWith('Invalid')) return issue.message;
  if (issue.code === 'invalid_value') return `must be one of ${issue.values.map(String).join(', ')}`;
  if (issue.code === 'invalid_type') {
    const what =
      { object: 'a mapping of keys', array: 'a list', record: 'a mapping of keys' }[issue.expected as string] ??
      `a ${issue.expected}`;
    return `must be ${what}`;
  }
  return issue.message;
}

/** Reads defaults < file (and code-given values) < environment < flags, validates, and fills per-driver defaults. */
export function loadConfig(options: LoadOptions = {}): ConsoleConfig {
  const args = fromArgv(options.argv ?? []);
  const filePath = args.configFile ?? options.configFile ?? 'config.yaml';
  const fileRequired = Boolean(args.configFile ?? options.configFile);
  let merged = fromFile(filePath, fileRequired);
  if (options.config) merged = deepMerge(merged, options.config as Tree);
  merged = deepMerge(merged, fromEnv(options.env ?? {}));
  merged = deepMerge(merged, args.tree);
  const result = configSchema.safeParse(merged);
  if (!result.success) throw new ConfigError(describe(result.error.issues[0]!, merged));
  const config = result.data;
  const defaults = DRIVER_DEFAULTS[config.database.driver];
  config.database.port ??= defaults.port;
  config.database.max_open_connections ??= defaults.max_open_connections;
  config.database.max_idle_connections ??= defaults.max_idle_connections;
  return config;
}

/** Lists every key with its environment variable, for the README's configuration reference. */
export function configKeys(): { key: string; env: string }[] {
  return KEYS.filter((k) => k.path.length > 1).map((k) => ({
    key: k.path.join('.'),
    env: k.path.join('_').toUpperCase(),
  }));
}
