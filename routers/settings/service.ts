import type { ChangeFeed } from '../../db/change-feed.ts';
import type { Database } from '../../db/database.ts';
import { readAllSettings, writeSettings } from '../../db/repositories/settings.ts';
import { BadRequestError } from '../../lib/errors.ts';
import { settingKind, type SettingsRegistry } from '../../lib/settings-registry.ts';
import type { AuditWriter } from '../audit/writer.ts';
import type { Actor } from '../common/context.ts';
import type { SettingDefinitionJson } from './schemas.ts';

export const SETTINGS_CHANNEL = 'settings';

type ChangeHandler = (key: string, value: unknown) => void;

/**
 * Runtime settings: declared in the registry, stored in the database, held in memory and refreshed on every
 * node through the change feed. Effects of a change (pool resize, ...) subscribe with `onChange`.
 */
export class SettingsService {
  private raw = new Map<string, string>();
  private parsed = new Map<string, unknown>();
  private readonly handlers: ChangeHandler[] = [];
  private reloadsStarted = 0;
  private reloadApplied = 0;

  constructor(
    private readonly db: Database,
    private readonly feed: ChangeFeed,
    readonly registry: SettingsRegistry,
    private readonly audit: AuditWriter,
  ) {}

  async start(): Promise<void> {
    await this.reload();
    this.feed.subscribe((channel) => (channel === SETTINGS_CHANNEL ? this.reload() : undefined));
  }

  private async reload(): Promise<void> {
    // Reloads overlap (a feed event during an update); one that started earlier must not win with older values.
    const seq = ++this.reloadsStarted;
    const stored = await readAllSettings(this.db);
    if (seq < this.reloadApplied) return;
    this.reloadApplied = seq;
    const next = new Map<string, string>();
    const parsed = new Map<string, unknown>();
    for (const def of this.registry.all()) {
      const { raw, value } = this.registry.resolve(def.key, stored.get(def.key));
      next.set(def.key, raw);
      parsed.set(def.key, value);
    }
    const changed = [...next.keys()].filter((k) => this.raw.size > 0 && this.raw.get(k) !== next.get(k));
    this.raw = next;
    this.parsed = parsed;
    for (const key of changed) for (const h of this.handlers) h(key, parsed.get(key));
  }

  /** The typed value of a declared setting. */
  get<T>(key: string): T {
    if (!this.parsed.has(key)) throw new Error(`setting ${key} is not declared`);
    return this.parsed.get(key) as T;
  }

  /** Every non-secret setting as strings. */
  publicMap(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const def of this.registry.all()) if (!def.secret) out[def.key] = this.raw.get(def.key) ?? def.default;
    return out;
  }

  /** Every declared setting with what a form needs to edit it; a secret's default is not told either. */
  definitions(): SettingDefinitionJson[] {
    return this.registry.all().map((def) => {
      const kind = settingKind(def);
      const secret = def.secret === true;
      return {
        key: def.key,
        description: def.description,
        type: kind.type,
        secret,
        default: secret ? null : def.default,
        min: kind.type === 'integer' ? kind.min : null,
        max: kind.type === 'integer' ? kind.max : null,
        values: kind.type === 'enum' ? [...kind.values()] : null,
      };
    });
  }

  /**
   * Validates the whole partial map first; saves all of it or nothing. Scalars are stored in their canonical
   * spelling (" 20 " → "20", "TRUE" → "true") so every node reads back what GET shows.
   * Each saved key is written to the audit log; answers the whole public map.
   */
  async update(values: Record<string, string>, { caller, req }: Actor): Promise<Record<string, string>> {
    const before: Record<string, string> = {};
    const after: Record<string, string> = {};
    for (const [key, value] of Object.entries(values)) {
      const def = this.registry.get(key);
      if (!def) throw new BadRequestError('settings.unknown_key', { key });
      const r = this.registry.parse(key, value);
      if (!r.ok) throw new BadRequestError('settings.invalid_value', { key, reason: r.reason });
      before[key] = this.raw.get(key) ?? def.default;
      after[key] = typeof r.value === 'object' ? value : String(r.value);
    }
    await writeSettings(this.db, after);
    await this.reload();
    await this.feed.publish(SETTINGS_CHANNEL);
    // One record per key: resource_id stays a key name (it is filtered on and has a bounded width). The values
    // sit under before/after, not under the key's name, so the writer's secret-name masking leaves e.g.
    // password_min_length readable; a secret setting's record says only that it changed.
    for (const key of Object.keys(after).sort()) {
      await this.audit.write({
        action: 'update',
        resource_type: 'setting',
        resource_id: key,
        actor: caller,
        req,
        details: this.registry.get(key)!.secret ? {} : { before: before[key], after: after[key] },
      });
    }
    return this.publicMap();
  }

  onChange(handler: ChangeHandler): void {
    this.handlers.push(handler);
  }
}
