import { stringify } from 'yaml';
import { z } from 'zod';
import { unwrap, wrapped } from './load.ts';
import { configSchema, DRIVER_DEFAULTS } from './schema.ts';

const HEADER = `# Console configuration: every key with its default and what it does.
# Generated from server/config/schema.ts by \`npm run config-example\`: change the schema, not this file.
# Copy what you change into config.yaml (or a file given with --config). A key written \`# key:\` has no
# default, and a block written \`# block:\` is off: remove the \`# \` to set them. Every key is also an
# environment variable (server.port -> SERVER_PORT) and a flag (--server.port 9090).
`;

/** The value a key takes when it is not given, as written in a file (durations as text), if it has one. */
function defaultOf(schema: z.ZodType): { value: unknown } | undefined {
  for (let s: z.ZodType | undefined = schema; s; s = wrapped(s))
    if (s instanceof z.ZodDefault) return { value: s.def.defaultValue };
  return undefined;
}

/** Parsing nothing succeeds with nothing: the key (or block) may be left out and has no default. */
const isOptional = (schema: z.ZodType) => {
  const parsed = schema.safeParse(undefined);
  return parsed.success && parsed.data === undefined;
};

/** Whether an object, given as it is, shows a default value (its own or in a block it always has). */
function holdsDefault(object: z.ZodObject): boolean {
  return Object.values(object.shape).some((s: z.ZodType) => {
    const inner = unwrap(s);
    return defaultOf(s) !== undefined || (inner instanceof z.ZodObject && !isOptional(s) && holdsDefault(inner));
  });
}

const yamlValue = (value: unknown) => stringify(value, { collectionStyle: 'flow' }).trim();

function described(schema: z.ZodType, path: string[]): string {
  if (!schema.description)
    throw new Error(
      `config key ${path.join('.')} has no description: add .describe() to it in server/config/schema.ts`,
    );
  const perDriver = path[0] === 'database' && path[1]! in DRIVER_DEFAULTS.sqlite;
  if (!perDriver) return schema.description;
  const defaults = Object.entries(DRIVER_DEFAULTS).map(([driver, d]) => `${driver} ${d[path[1] as keyof typeof d]}`);
  return `${schema.description}; default by driver: ${defaults.join(', ')}`;
}

/** A line at `depth`; from `offFrom` on, switched off: `# ` at that depth, the rest indented after it. */
function at(depth: number, text: string, offFrom?: number): string {
  if (offFrom === undefined) return `${'  '.repeat(depth)}${text}`;
  return `${'  '.repeat(offFrom)}# ${'  '.repeat(depth - offFrom)}${text}`;
}

const isText = (schema: z.ZodType) => unwrap(schema).def.type === 'string';

/**
 * The lines of one object's keys at `depth`, switched off from `offFrom` on (inside a block that is off).
 * Removing the `# ` of a switched-off block gives valid YAML.
 */
function objectLines(shape: Record<string, z.ZodType>, path: string[], depth: number, offFrom?: number): string[] {
  return Object.entries(shape).flatMap(([key, schema]) => {
    const keyPath = [...path, key];
    const inner = unwrap(schema);
    // Top-level sections need no description of their own.
    const comment = depth === 0 && !schema.description ? [] : [at(depth, `# ${described(schema, keyPath)}`, offFrom)];
    if (inner instanceof z.ZodObject) {
      // A block that may be left out, or holds no default to show, is switched off: an empty `key:` would not load.
      const off = offFrom ?? (isOptional(schema) || !holdsDefault(inner) ? depth : undefined);
      return [...comment, at(depth, `${key}:`, off), ...objectLines(inner.shape, keyPath, depth + 1, off)];
    }
    const lines = comment;
    const fallback = defaultOf(schema);
    // A key without a default is shown switched off, with an empty placeholder when it takes text.
    if (!fallback) {
      const placeholder = isText(schema) ? ' ""' : '';
      lines.push(at(depth, `${key}:${placeholder}`, offFrom ?? (isOptional(schema) ? depth : undefined)));
    } else lines.push(at(depth, `${key}: ${yamlValue(fallback.value)}`, offFrom));
    const element = inner instanceof z.ZodArray ? unwrap(inner.def.element as z.ZodType) : undefined;
    if (element instanceof z.ZodObject) {
      // A list of objects shows one entry, switched off, with each of its keys.
      const off = offFrom ?? depth;
      lines.push(
        at(depth, `${key}:`, off),
        at(depth + 1, '-', off),
        ...objectLines(element.shape, [...keyPath, '[]'], depth + 2, off),
      );
    }
    return lines;
  });
}

/** config.example.yaml: every key of the schema with its default (or an empty placeholder) and a one-line comment. */
export function configExample(): string {
  return `${HEADER}${objectLines(configSchema.shape, [], 0).join('\n')}\n`;
}
