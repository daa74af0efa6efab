import { randomUUID } from 'node:crypto';
import type { ClaimRequest } from '../db/tasks/claim.ts';
import type { NewTaskRow, TaskRow } from '../db/tasks/row.ts';
import type { EngineCore } from './core.ts';
import type { Execution } from './execute.ts';
import { claimDecision, columnsFor } from './machine.ts';
import type { Outcomes } from './outcomes.ts';
import { SETTING_LOG_BACKEND } from './settings.ts';

/**
 * Claims pending tasks for this node's free slots, and ahead of them while its tasks run quickly (`ClaimedAhead`).
 * Wake-ups within one turn of the event loop (a batch of finished runs) make one pass; one claim is under way at
 * a time: concurrent claims of one node would only contend for the same rows (measured slower on PostgreSQL),
 * while outcome writes, and the runs of tasks claimed ahead, overlap with the claim.
 */
export class Claimer {
  private claiming = false;
  /** The claim under way, or the last one. */
  private claimed: Promise<void> = Promise.resolve();
  private wakes = 0;
  private scheduled = false;
  /**
   * The last claim took fewer tasks than it asked for, and no wake-up came since: there is no work left to claim
   * until one comes, so a run ending does not claim (its outcome goes out by itself, and a create meanwhile finds
   * no claim under way to wait behind).
   */
  private drained = false;
  /** The last claim took all it asked for: work is backed up, and claiming ahead pays (a big claim costs more). */
  private backlog = false;

  constructor(
    private readonly core: EngineCore,
    private readonly execution: Execution,
    private readonly outcomes: Outcomes,
  ) {}

  wake(): void {
    this.wakes++;
    this.drained = false;
    this.schedule();
  }

  freed(): void {
    this.schedule();
  }

  private schedule(): void {
    if (this.core.phase !== 'running' || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  /** Claims nothing more; hands the tasks claimed ahead back, once the claim under way has answered. */
  async stop(): Promise<void> {
    await this.claimed;
    await Promise.all(this.core.ahead.takeAll().map((h) => this.outcomes.release(h.row)));
  }

  private pump(): void {
    const { core } = this;
    if (core.phase !== 'running') return;
    this.startHeld();
    if (this.claiming || this.drained || !core.runners.size) return;
    const ahead = this.backlog ? core.ahead.room(core.runners.keys(), core.limit) : 0;
    const want = core.limit - core.runs.size + ahead;
    if (want > 0) this.claimed = this.claim([...core.runners.keys()], want);
  }

  /** Free slots start the tasks claimed ahead, oldest first; those held too long go back (`ClaimedAhead`). */
  private startHeld(): void {
    const { core } = this;
    for (const h of core.ahead.expired(performance.now())) void this.outcomes.release(h.row);
    while (core.runs.size < core.limit) {
      const h = core.ahead.shift();
      if (!h) return;
      this.execution.launch(h.row, h.sentAt);
    }
  }

  /**
   * Inserts a task created on this node already claimed, when the node would claim it next anyway: its type runs
   * here, a slot is free, no claim is under way and the last one found no work left. One statement then starts
   * it, instead of an insert and a claim. False: the caller inserts it pending, as usual.
   */
  async createClaimed(row: NewTaskRow, now: Date): Promise<boolean> {
    const { core } = this;
    const { insertClaimed } = core.store;
    const free = core.limit - core.runs.size - core.ahead.size > 0;
    if (!insertClaimed || !this.drained || this.claiming || core.phase !== 'running' || !free) return false;
    if (!core.runners.has(row.type)) return false;
    this.claiming = true;
    const sentAt = performance.now();
    const claimed = insertClaimed(row, now, this.request([row.type], 1));
    this.claimed = claimed.then(
      () => {},
      () => {},
    );
    try {
      core.ahead.hold(await claimed, sentAt);
    } finally {
      this.claiming = false;
    }
    // Started at the next turn: the create resolves first, so its caller sees the task before any of its run.
    this.schedule();
    return true;
  }

  /** The machine decides the claim; its statement writes the decision's columns on every row it takes. */
  private request(types: string[], limit: number): ClaimRequest {
    const { core } = this;
    const patch = columnsFor(claimDecision(), {
      now: new Date().toISOString(),
      progress: 0,
      logBackend: core.deps.settings.get<string>(SETTING_LOG_BACKEND),
    });
    return { workerId: core.workerId, claimId: randomUUID(), types, limit, leaseMs: core.config.leaseTtlMs, patch };
  }

  private async claim(types: string[], limit: number): Promise<void> {
    const { core } = this;
    this.claiming = true;
    const wakesBefore = this.wakes;
    let rows: TaskRow[] = [];
    const sentAt = performance.now();
    try {
      const request = this.request(types, limit);
      const { store } = core;
      // Where the database allows, the outcomes queued meanwhile go out in the claim's statement.
      if (store.claimAfter) {
        const claimed = core.writer.along((changes) =>
          changes.length ? store.claimAfter!(request, changes) : store.claim(request).then((r) => [[], r]),
        );
        core.writer.pause();
        rows = await claimed;
      } else rows = await store.claim(request);
      this.drained = rows.length < limit;
      this.backlog = !this.drained;
    } catch (error) {
      if (core.phase === 'running')
        core.logger.warn({ err: error }, 'claiming tasks failed; trying again at the next poll');
    } finally {
      this.claiming = false;
    }
    // Started oldest first, after those held already; a stopping node holds them, for `stop` to hand back.
    for (const row of rows) core.ahead.hold(row, sentAt);
    if (core.phase === 'running') this.startHeld();
    // A full claim may have left more behind, and a wake-up during the claim may concern a task it missed.
    if (rows.length === limit || this.wakes !== wakesBefore) this.wake();
    core.writer.resume();
  }
}
