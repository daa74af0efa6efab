import type { ChangeFeed } from '../db/change-feed.ts';
import type { Database } from '../db/database.ts';
import {
  readScheduleState,
  readScheduleStates,
  saveScheduleState,
  type ScheduleStateRow,
} from '../db/repositories/schedules.ts';
import { BadRequestError, NotFoundError } from '../lib/errors.ts';
import type { ScheduleJson } from '../lib/schedule-schema.ts';
import type { TaskEngine } from './engine.ts';
import {
  checkDefinition,
  nextFire,
  scheduledTask,
  toScheduleJson,
  type ScheduleDefinition,
} from './schedule-definition.ts';
import type { EngineLogger, TaskJson } from './types.ts';

export const SCHEDULES_CHANNEL = 'schedules';

export interface SchedulerDeps {
  db: Database;
  feed: ChangeFeed;
  engine: TaskEngine;
  logger: EngineLogger;
}

// setTimeout holds at most ~24.8 days; a later fire is re-armed when the timer ends.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Fires tasks on cron schedules. Every node arms every enabled schedule; each fire inserts a task with the
 * fire key `<id>@<fire time>`, which is unique, so exactly one node's insert makes the task. Enabled state
 * and last/next run live in the database; a toggle reaches every node through the change feed. Fires missed
 * while no node ran are not caught up.
 */
export class Scheduler {
  private readonly defs = new Map<string, ScheduleDefinition>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private states = new Map<string, ScheduleStateRow>();
  private started = false;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly deps: SchedulerDeps) {}

  define(def: ScheduleDefinition): void {
    checkDefinition(def);
    this.defs.set(def.id, def);
    if (this.started) this.arm(def);
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.unsubscribe = this.deps.feed.subscribe((channel) => {
      if (channel === SCHEDULES_CHANNEL) void this.reload();
    });
    await this.reload();
  }

  async stop(): Promise<void> {
    this.started = false;
    this.unsubscribe?.();
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  /** Every schedule with its stored state (read from the database, so every node answers the same). */
  async list(): Promise<ScheduleJson[]> {
    const states = await readScheduleStates(this.deps.db);
    return [...this.defs.values()]
      .map((d) => this.toJson(d, states.get(d.id)))
      .sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  }

  async get(id: string): Promise<ScheduleJson> {
    const def = this.definition(id);
    return this.toJson(def, await readScheduleState(this.deps.db, id));
  }

  /** Sets (or, without `enabled`, flips) whether the schedule fires; holds on every node. */
  async toggle(id: string, enabled?: boolean): Promise<ScheduleJson> {
    const def = this.definition(id);
    const stored = await readScheduleState(this.deps.db, id);
    const next = enabled ?? !this.enabled(def, stored);
    await saveScheduleState(
      this.deps.db,
      id,
      { enabled: next, next_run: next ? nextFire(def, new Date()).toISOString() : null },
      next,
    );
    await this.deps.feed.publish(SCHEDULES_CHANNEL);
    await this.reload();
    return this.get(id);
  }

  /** Creates one task now, owned by `creatorId` (category system); a disabled schedule → 400. */
  async trigger(id: string, creatorId: string | null, orgId?: string | null): Promise<TaskJson> {
    const def = this.definition(id);
    const stored = await readScheduleState(this.deps.db, id);
    if (!this.enabled(def, stored)) throw new BadRequestError('schedule.disabled');
    const task = await this.deps.engine.create({ ...scheduledTask(def), creatorId, orgId });
    await saveScheduleState(this.deps.db, id, { last_run: task!.created_at }, true);
    return task!;
  }

  private definition(id: string): ScheduleDefinition {
    const def = this.defs.get(id);
    if (!def) throw new NotFoundError('schedule.not_found');
    return def;
  }

  private enabled(def: ScheduleDefinition, state = this.states.get(def.id)): boolean {
    return state?.enabled ?? def.enabled ?? true;
  }

  private toJson(def: ScheduleDefinition, state: ScheduleStateRow | undefined): ScheduleJson {
    return toScheduleJson(def, state, this.enabled(def, state));
  }

  private async reload(): Promise<void> {
    try {
      this.states = await readScheduleStates(this.deps.db);
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'reading schedule states failed');
      return;
    }
    if (this.started) for (const def of this.defs.values()) this.arm(def);
  }

  private arm(def: ScheduleDefinition, after = new Date()): void {
    clearTimeout(this.timers.get(def.id));
    this.timers.delete(def.id);
    if (!this.started || !this.enabled(def)) return;
    const at = nextFire(def, after);
    const wait = at.getTime() - Date.now();
    const timer =
      wait > MAX_TIMER_MS
        ? setTimeout(() => this.arm(def), MAX_TIMER_MS)
        : setTimeout(() => void this.fire(def, at), Math.max(0, wait));
    timer.unref();
    this.timers.set(def.id, timer);
  }

  private async fire(def: ScheduleDefinition, at: Date): Promise<void> {
    // The next fire counts from this one (or from now, if this one came late): no fire twice, none caught up.
    this.arm(def, new Date(Math.max(at.getTime(), Date.now())));
    try {
      // The database has the last word on enabled: a toggle on another node may not have arrived here yet.
      const stored = await readScheduleState(this.deps.db, def.id);
      if (!this.enabled(def, stored)) return;
      const task = await this.deps.engine.create({
        ...scheduledTask(def),
        creatorId: null,
        fireKey: `${def.id}@${at.toISOString()}`,
      });
      if (task)
        await saveScheduleState(
          this.deps.db,
          def.id,
          { last_run: at.toISOString(), next_run: nextFire(def, at).toISOString() },
          true,
        );
    } catch (error) {
      this.deps.logger.error({ err: error, schedule: def.id }, 'firing a schedule failed');
    }
  }
}
