import type { TaskRow } from '../db/tasks/row.ts';

/** A type whose runs take this long at most, on average, is quick: its tasks may be claimed ahead of free slots. */
const QUICK_MS = 20;
/** The weight of the newest run in a type's mean run time: a type that turns slow stops claiming ahead at once. */
const NEWEST = 0.2;
/** Held tasks are as many as the slots start within about this long, at the slowest type's mean run time... */
const START_WITHIN_MS = 100;
/** ...and at most this many: the claim statement's size, where a bigger one saved little more (docs/engine.md). */
const MAX_AHEAD = 100;
/**
 * Only the types that ended a run this recently decide: a type registered and idle (a built-in export, a nightly
 * cleanup) says nothing about how soon the slots free up now, and one slow run long ago must not stop it for good.
 */
const RECENT_MS = 10_000;
/** How long a task is held at most (and a quarter of the lease, at most): then it goes back to pending. */
const MAX_HOLD_MS = 1000;

export interface Held {
  row: TaskRow;
  /** When the claim statement that took the task was sent (performance.now()): its lease counts from then. */
  sentAt: number;
}

/**
 * Tasks this node claimed ahead of its free slots (docs/engine.md "Claiming ahead"): stored as running, not
 * started yet. While every type that ran in the last 10 s runs quickly, a claim takes beyond the free slots as many
 * as the slots start within about 100 ms, so slots freed while the next claim is under way start at once instead
 * of waiting for it, and each statement carries more tasks; a slow type stops that, since held tasks would wait
 * for slots that stay busy, and so does no run at all (nothing is known yet). A task held longer than a second, or a quarter of the lease (so no lease lapses
 * while held), is handed back by the claimer, and nothing more is claimed ahead until a run ends: the runs under
 * way are slower than their type's mean says.
 */
export class ClaimedAhead {
  private readonly held = new Map<string, Held>();
  private readonly meanRunMs = new Map<string, number>();
  /** When each type last ended a run (performance.now()). */
  private readonly lastRunAt = new Map<string, number>();
  private paused = false;

  private readonly holdMs: number;

  constructor(leaseTtlMs: number) {
    this.holdMs = Math.min(MAX_HOLD_MS, leaseTtlMs / 4);
  }

  get size(): number {
    return this.held.size;
  }

  /** A run of `type` took `ms`, ending `now`. */
  ran(type: string, ms: number, now = performance.now()): void {
    this.paused = false;
    this.lastRunAt.set(type, now);
    const mean = this.meanRunMs.get(type);
    this.meanRunMs.set(type, mean === undefined ? ms : mean + NEWEST * (ms - mean));
  }

  /** How many tasks a claim may take beyond the free slots of a pool of `limit`. */
  room(types: Iterable<string>, limit: number, now = performance.now()): number {
    if (this.paused) return 0;
    let slowest: number | undefined;
    for (const type of types) {
      const last = this.lastRunAt.get(type);
      if (last === undefined || now - last > RECENT_MS) continue;
      const mean = this.meanRunMs.get(type)!;
      if (mean > QUICK_MS) return 0;
      slowest = Math.max(slowest ?? 0, mean);
    }
    if (slowest === undefined) return 0;
    const ahead = Math.min(MAX_AHEAD, Math.floor((limit * START_WITHIN_MS) / Math.max(slowest, 0.001)));
    return Math.max(0, ahead - this.held.size);
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
    const [oldest] = this.held.values();
    if (oldest) this.held.delete(oldest.row.id);
    return oldest;
  }

  /** Tasks held too long, no longer held. */
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
