import type { EngineCore } from './core.ts';
import type { Outcomes } from './outcomes.ts';

/** Change-feed channels: new claimable work somewhere, and a cancel for a task that may run on any node. */
export const TASKS_CHANNEL = 'tasks';
export const TASK_CANCEL_CHANNEL = 'task_cancel';

/** What nodes tell each other through the change feed: claimable work, and cancels of running tasks. */
export class Notices {
  private announceTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly core: EngineCore,
    private readonly outcomes: Outcomes,
  ) {}

  listen(): void {
    this.unsubscribe = this.core.deps.feed.subscribe((channel) => {
      if (channel === TASKS_CHANNEL) this.core.wake();
      else if (channel === TASK_CANCEL_CHANNEL) void this.checkCancels();
    });
  }

  close(): void {
    clearTimeout(this.announceTimer);
    this.unsubscribe?.();
  }

  /**
   * Tells other nodes there is claimable work; coalesced so a burst of creates costs one notice. This node woke
   * its own claimer already, so it is not told again: a wake-up here would be an empty claim that the next
   * create's claim then waits behind.
   */
  announce(): void {
    if (this.announceTimer || this.core.phase === 'stopped') return;
    this.announceTimer = setTimeout(() => {
      this.announceTimer = undefined;
      this.core.deps.feed
        .publish(TASKS_CHANNEL, { othersOnly: true })
        .catch((error) => this.core.logger.warn({ err: error }, 'announcing new tasks failed'));
    }, 20);
    this.announceTimer.unref();
  }

  /** Tells the node running the task, whichever it is, that a cancel was stored. */
  publishCancel(): Promise<void> {
    return this.core.deps.feed.publish(TASK_CANCEL_CHANNEL);
  }

  /**
   * A cancel was stored somewhere: the runs of this node it concerns are told, and the tasks it claimed ahead
   * end cancelled without starting.
   */
  private async checkCancels(): Promise<void> {
    const { core } = this;
    const ids = [...core.runs.values()].filter((r) => !r.detached).map((r) => r.row.id);
    ids.push(...core.ahead.ids());
    if (!ids.length) return;
    try {
      for (const held of await core.store.held(ids, true)) {
        // Started meanwhile or still held, whichever it is now.
        const run = core.runs.get(held.id);
        if (run) {
          if (held.claim_id === run.claimId) this.outcomes.cancelLocal(run);
          continue;
        }
        const ahead = core.ahead.take(held.id);
        if (ahead) void this.outcomes.release({ ...ahead.row, cancel_requested: true });
      }
    } catch (error) {
      core.logger.warn({ err: error }, 'checking for cancelled tasks failed');
    }
  }
}
