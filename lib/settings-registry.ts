import { z } from 'zod';

/** One runtime setting, declared once: key, type (through its schema), default, validation, secrecy. */
export interface SettingDefinition<T = unknown> {
  key: string;
  description: string;
  default: string;
  /** Parses the stored string; its failure message becomes the E4001 reason. */
  schema: z.ZodType<T, string>;
  /** Secret settings are never returned by GET /system/settings nor shown in audit details. */
  secret?: boolean;
}

/** What an editor of a setting needs to know of its value (a form picks its input by `type`). */
export type SettingKind =
  | { type: 'integer'; min: number; max: number }
  | { type: 'boolean' }
  | { type: 'enum'; values: () => readonly string[] }
  | { type: 'string' };

// Kept beside the schemas the helpers make, so a declaration says its type once (through its helper).
const kinds = new WeakMap<z.ZodType, SettingKind>();
function kindOf<S extends z.ZodType>(schema: S, kind: SettingKind): S {
  kinds.set(schema, kind);
  return schema;
}

/** The kind of a declared setting's value; a schema of no helper's is a free string. */
export const settingKind = (def: SettingDefinition): SettingKind => kinds.get(def.schema) ?? { type: 'string' };

export const intSetting = (min: number, max: number) =>
  kindOf(
    z
      .string()
      .trim()
      .regex(/^-?\d+$/, 'must be a whole number')
      .transform(Number)
      .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`)),
    { type: 'integer', min, max },
  );

export const boolSetting = () =>
  kindOf(
    z
      .string()
      .trim()
      .toLowerCase()
      .pipe(z.enum(['true', 'false'], 'must be true or false'))
      .transform((v) => v === 'true'),
    { type: 'boolean' },
  );

export const enumSetting = (values: () => readonly string[]) =>
  kindOf(
    z.string().refine((v) => values().includes(v), { error: () => `must be one of ${values().join(', ')}` }),
    { type: 'enum', values },
  );

/** The declared settings; layers add their own (identity here, task engine and mail in theirs). */
export class SettingsRegistry {
  private readonly defs = new Map<string, SettingDefinition>();

  declare<T>(def: SettingDefinition<T>): void {
    this.defs.set(def.key, def as SettingDefinition);
  }

  get(key: string): SettingDefinition | undefined {
    return this.defs.get(key);
  }

  all(): SettingDefinition[] {
    return [...this.defs.values()];
  }

  /** What a declared setting is when `stored` is its stored text: that text parsed when valid, else its default. */
  resolve(key: string, stored: string | undefined): { raw: string; value: unknown } {
    const def = this.defs.get(key);
    if (!def) throw new Error(`unknown setting ${key}`);
    const r = stored === undefined ? undefined : this.parse(key, stored);
    if (r?.ok) return { raw: stored!, value: r.value };
    return { raw: def.default, value: (this.parse(key, def.default) as { value: unknown }).value };
  }

  /** The parsed value or the reason it is invalid. */
  parse(key: string, raw: string): { ok: true; value: unknown } | { ok: false; reason: string } {
    const def = this.defs.get(key);
    if (!def) return { ok: false, reason: 'unknown setting' };
    const r = def.schema.safeParse(raw);
    return r.success
      ? { ok: true, value: r.data }
      : { ok: false, reason: r.error.issues[0]?.message ?? 'invalid value' };
  }
}
