import { randomUUID } from 'node:crypto';
import type { TaskRow } from '../db/tasks/row.ts';
import type { EngineCore } from './core.ts';
import type { Execution } from './execute.ts';
import { claimDecision, columnsFor } from './machine.ts';
import { SETTING_LOG_BACKEND } from './settings.ts';

/**
 * Claims pending tasks for this node's free slots. Wake-ups within one turn of the event loop (a batch of
 * finished runs) make one pass; one claim is under way at a time: concurrent claims of one node would only
 * contend for the same rows (measured slower on PostgreSQL), while outcome writes do overlap with the claim.
 */
export class Claimer {
  private claiming = false;
  private wakes = 0;
  private scheduled = false;

  constructor(
    private readonly core: EngineCore,
    private readonly execution: Execution,
  ) {}

  wake(): void {
    if (this.core.phase !== 'running') return;
    this.wakes++;
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    const { core } = this;
    if (this.claiming || core.phase !== 'running') return;
    const free = core.limit - core.runs.size;
    const types = [...core.runners.keys()];
    if (free > 0 && types.length) void this.claim(types, free);
  }

  private async claim(types: string[], limit: number): Promise<void> {
    const { core } = this;
    this.claiming = true;
    const wakesBefore = this.wakes;
    let rows: TaskRow[] = [];
    const sentAt = performance.now();
    try {
      // The machine decides the claim; the statement writes its columns on every row it takes.
      const decision = claimDecision();
      const patch = columnsFor(decision, {
        now: new Date().toISOString(),
        progress: 0,
        logBackend: core.deps.settings.get<string>(SETTING_LOG_BACKEND),
      });
      const request = {
        workerId: core.workerId,
        claimId: randomUUID(),
        types,
        limit,
        leaseMs: core.config.leaseTtlMs,
        patch,
      };
      const { store } = core;
      // Where the database allows, the outcomes queued meanwhile go out in the claim's statement.
      rows = store.claimAfter
        ? await core.writer.along((changes) =>
            changes.length ? store.claimAfter!(request, changes) : store.claim(request).then((r) => [[], r]),
          )
        : await store.claim(request);
    } catch (error) {
      if (core.phase === 'running')
        core.logger.warn({ err: error }, 'claiming tasks failed; trying again at the next poll');
    } finally {
      this.claiming = false;
    }
    for (const row of rows) this.execution.launch(row, sentAt);
    // A full claim may have left more behind, and a wake-up during the claim may concern a task it missed.
    if (rows.length === limit || this.wakes !== wakesBefore) this.wake();
  }
}
