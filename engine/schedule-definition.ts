import type { ScheduleStateRow } from '../db/repositories/schedules.ts';
import type { ScheduleJson } from '../lib/schedule-schema.ts';
import { nextCronFire } from './cron.ts';

/** A cron schedule defined in code (docs/engine.md). */
export interface ScheduleDefinition {
  /** 1–64 letters, digits, `_ . : -`. */
  id: string;
  name: string;
  /** Cron spec: five fields, or six with seconds first. */
  spec: string;
  taskType: string;
  /** IANA zone the spec is read in; default UTC. */
  timezone?: string;
  /** The payload of each task (a string is stored as is, anything else as JSON); default `{}`. */
  payload?: () => unknown;
  maxRetries?: number;
  /** The state before anyone toggles it; default enabled. */
  enabled?: boolean;
}

const zoneOf = (def: ScheduleDefinition) => def.timezone ?? 'UTC';

export function nextFire(def: ScheduleDefinition, after: Date): Date {
  return nextCronFire(def.spec, zoneOf(def), after);
}

/** Throws, naming the schedule, when its id, spec or timezone would not work: at definition, not at a fire. */
export function checkDefinition(def: ScheduleDefinition): void {
  if (!/^[\w.:-]{1,64}$/.test(def.id)) throw new Error(`schedule id "${def.id}" must be 1-64 letters, digits, _ . : -`);
  try {
    nextFire(def, new Date());
  } catch (error) {
    throw new Error(
      `schedule ${def.id}: invalid spec "${def.spec}" or timezone "${zoneOf(def)}": ${(error as Error).message}`,
    );
  }
}

/** The schedule as the API answers it, with its stored state and whether it fires. */
export function toScheduleJson(
  def: ScheduleDefinition,
  state: ScheduleStateRow | undefined,
  enabled: boolean,
): ScheduleJson {
  return {
    id: def.id,
    name: def.name,
    spec: def.spec,
    task_type: def.taskType,
    timezone: zoneOf(def),
    enabled,
    next_run: enabled ? nextFire(def, new Date()).toISOString() : null,
    last_run: state?.last_run ?? null,
  };
}

/** What each fire (or trigger) of the schedule creates: a `system` task of its type. */
export function scheduledTask(def: ScheduleDefinition) {
  return {
    type: def.taskType,
    payload: def.payload?.(),
    category: 'system' as const,
    cronScheduleId: def.id,
    maxRetries: def.maxRetries ?? 0,
  };
}
