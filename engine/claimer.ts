import { randomUUID } from 'node:crypto';
import type { ClaimRequest } from '../db/tasks/claim.ts';
import type { NewTaskRow, TaskRow } from '../db/tasks/row.ts';
import type { EngineCore } from './core.ts';
import type { Execution } from './execute.ts';
import { claimDecision, columnsFor } from './machine.ts';
import type { Outcomes } from './outcomes.ts';
import { SETTING_LOG_BACKEND } from './settings.ts';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Claims pending tasks for this node's free slots, and ahead of them while its tasks run quickly (`ClaimedAhead`).
 * Wake-ups within one turn of the event loop (a batch of finished runs) make one pass; one claim is under way at
 * a time: concurrent claims of one node would only contend for the same rows (measured slower on PostgreSQL),
 * while outcome writes, and the runs of tasks claimed ahead, overlap with the claim.
 */
export class Claimer {
  private claiming = false;
  /** The claim under way (or the last one), settled once its tasks are started or held. */
  private claimed: Promise<void> = Promise.resolve();
  private wakes = 0;
  private scheduled = false;
  /** Tasks inserted claimed that start at the next turn: each holds a slot meanwhile. */
  private starting = 0;
  /**
   * The last claim found no task, and no wake-up came since: there is no work to claim until one comes, so a run
   * ending does not claim (its outcome goes out by itself), and a task created here may be inserted claimed.
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

  /**
   * Claims nothing more (the node is stopping): once the claim under way has answered, hands back what it and
   * earlier claims hold unstarted.
   */
  async stop(): Promise<void> {
    await this.claimed;
    await Promise.all(this.core.ahead.takeAll().map((h) => this.outcomes.release(h.row)));
  }

  /**
   * Inserts a task created on this node already claimed, when the node would claim it next anyway: its type runs
   * here, a slot is free, no claim is under way and the last one found no work. One statement then starts it,
   * instead of an insert and a claim. False: the caller inserts it pending, as usual.
   */
  async createClaimed(row: NewTaskRow, now: Date): Promise<boolean> {
    const { core } = this;
    const { insertClaimed } = core.store;
    if (!insertClaimed || !this.drained || this.claiming || core.phase !== 'running') return false;
    if (!core.runners.has(row.type) || this.freeSlots() - core.ahead.size <= 0) return false;
    const sentAt = performance.now();
    const inserted = insertClaimed(row, now, this.request([row.type], 1));
    this.claiming = true;
    this.starting++;
    // Started at the next turn: the create answers first, so its caller sees the task before any of its run.
    const started = inserted.then(async (task) => {
      await nextTurn();
      this.starting--;
      if (core.phase === 'running') this.execution.launch(task, sentAt);
      else await this.outcomes.release(task);
    });
    this.claimed = started.catch(() => {});
    try {
      await inserted;
    } catch (error) {
      this.starting--;
      throw error;
    } finally {
      this.claiming = false;
      // Wake-ups while the insert was under way found a claim under way, and left it to this one.
      this.schedule();
    }
    return true;
  }

  private freeSlots(): number {
    return this.core.limit - this.core.runs.size - this.starting;
  }

  private schedule(): void {
    if (this.core.phase !== 'running' || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    const { core } = this;
    if (core.phase !== 'running') return;
    this.startHeld();
    if (this.claiming || this.drained || !core.runners.size) return;
    const ahead = this.backlog ? core.ahead.room(core.runners.keys(), core.limit) : 0;
    const want = this.freeSlots() + ahead;
    if (want > 0) this.claimed = this.claim([...core.runners.keys()], want);
  }

  /** Free slots start the tasks claimed ahead, oldest first; those held too long go back (`ClaimedAhead`). */
  private startHeld(): void {
    const { core } = this;
    for (const h of core.ahead.expired(performance.now())) void this.outcomes.release(h.row);
    while (this.freeSlots() > 0) {
      const h = core.ahead.shift();
      if (!h) return;
      this.execution.launch(h.row, h.sentAt);
    }
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
      rows = store.claimAfter
        ? await core.writer.along((changes) =>
            changes.length ? store.claimAfter!(request, changes) : store.claim(request).then((r) => [[], r]),
          )
        : await store.claim(request);
      // Fewer than asked is no proof that none are left (another node may have taken some); none found is.
      this.drained = rows.length === 0;
      this.backlog = rows.length === limit;
    } catch (error) {
      if (core.phase === 'running')
        core.logger.warn({ err: error }, 'claiming tasks failed; trying again at the next poll');
    } finally {
      this.claiming = false;
    }
    if (core.phase !== 'running') {
      // A stopping node holds them, for `stop` to hand back.
      for (const row of rows) core.ahead.hold(row, sentAt);
    } else {
      // Those held already go first; the free slots' share of this claim starts at once, however long it took.
      this.startHeld();
      for (const row of rows)
        if (this.freeSlots() > 0) this.execution.launch(row, sentAt);
        else core.ahead.hold(row, sentAt);
    }
    // A full claim may have left more behind, and a wake-up during the claim may concern a task it missed.
    if (rows.length === limit || this.wakes !== wakesBefore) this.wake();
    core.writer.resume();
  }
}
