import type { TaskRow } from '../db/tasks/row.ts';

/** A type whose runs take this long at most, on average, is quick: its tasks may be claimed ahead of free slots. */
const QUICK_MS = 20;
/** The weight of the newest run in a type's mean run time: a type that turns slow stops claiming ahead at once. */
const NEWEST = 0.2;
/** Pools' worth of tasks held at most: one covers the claim under way, the other the one after it. */
const POOLS_AHEAD = 2;

export interface Held {
  row: TaskRow;
  /** When the claim statement that took the task was sent (performance.now()): its lease counts from then. */
  sentAt: number;
}

/**
 * Tasks this node claimed ahead of its free slots (docs/engine.md "Claiming ahead"): stored as running, not
 * started yet. While every registered type runs quickly, a claim takes up to two pools' worth more than the free
 * slots, so slots freed while the next claim is under way start at once instead of waiting for it; a slow or
 * unknown type stops that, since its held tasks would wait for slots that stay busy. A task held longer than
 * `holdMs` (at most a quarter of the lease, so no lease lapses while held) is handed back by the claimer, and
 * nothing more is claimed ahead until a run ends: the runs under way are slower than their type's mean says.
 */
export class ClaimedAhead {
  private readonly held = new Map<string, Held>();
  private readonly meanRunMs = new Map<string, number>();
  private paused = false;

  constructor(readonly holdMs: number) {}

  get size(): number {
    return this.held.size;
  }

  /** A run of `type` took `ms`. */
  ran(type: string, ms: number): void {
    this.paused = false;
    const mean = this.meanRunMs.get(type);
    this.meanRunMs.set(type, mean === undefined ? ms : mean + NEWEST * (ms - mean));
  }

  /** How many tasks a claim may take beyond the free slots of a pool of `limit`. */
  room(types: Iterable<string>, limit: number): number {
    if (this.paused) return 0;
    for (const type of types) if (!((this.meanRunMs.get(type) ?? Infinity) <= QUICK_MS)) return 0;
    return Math.max(0, POOLS_AHEAD * limit - this.held.size);
  }

  hold(row: TaskRow, sentAt: number): void {
    this.held.set(row.id, { row, sentAt });
  }

  /** The task with this id, no longer held. */
  take(id: string): Held | undefined {
    const h = this.held.get(id);
    this.held.delete(id);
    return h;
  }

  /** The oldest held task, no longer held. */
  shift(): Held | undefined {
    for (const [id, h] of this.held) {
      this.held.delete(id);
      return h;
    }
    return undefined;
  }

  /** Tasks held past `holdMs`, no longer held. */
  expired(now: number): Held[] {
    const out: Held[] = [];
    for (const [id, h] of this.held)
      if (now - h.sentAt > this.holdMs) {
        this.held.delete(id);
        out.push(h);
      }
    if (out.length) this.paused = true;
    return out;
  }

  /** Every held task, no longer held. */
  takeAll(): Held[] {
    const all = [...this.held.values()];
    this.held.clear();
    return all;
  }

  ids(): string[] {
    return [...this.held.keys()];
  }
}
