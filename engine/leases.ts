import { uuidv7 } from '../lib/uuid7.ts';
import type { EngineCore } from './core.ts';
import { LeaseWatch } from './lease-watch.ts';
import { columnsFor, decide } from './machine.ts';
import type { Outcomes } from './outcomes.ts';

/**
 * Leases of this node's runs (renewed every `task.lease_renew_interval`; a run whose lease cannot be vouched
 * for is stopped) and the reaper, which hands tasks of dead nodes back through the machine's EXPIRE.
 */
export class Leases {
  /** Renewals failing (the database down) must stop a run before another node's reaper may take its task. */
  readonly watch: LeaseWatch;
  private renewing = false;

  constructor(
    private readonly core: EngineCore,
    private readonly outcomes: Outcomes,
  ) {
    this.watch = new LeaseWatch(core.config.leaseTtlMs * core.config.leaseAbortAt, (run) => {
      if (!run.finishing) outcomes.detach(run, 'lease could not be renewed', true);
    });
  }

  /**
   * Extends the leases of this node's runs; a run whose row another node holds now is detached. A run whose
   * lease cannot be renewed is stopped by the lease watch, not here: a renewal may hang as long as it fails.
   */
  async renew(): Promise<void> {
    const { core } = this;
    const runs = [...core.runs.values()].filter((r) => !r.detached && !r.finishing);
    if (!runs.length || this.renewing) return;
    this.renewing = true;
    const sentAt = performance.now();
    try {
      const ids = runs.map((r) => r.row.id);
      const held = new Map((await core.store.renew(core.workerId, ids, core.config.leaseTtlMs)).map((h) => [h.id, h]));
      for (const run of runs) {
        const h = held.get(run.row.id);
        if (run.finishing || run.detached) continue;
        if (!h || h.status !== 'running' || h.claim_id !== run.claimId) this.outcomes.detach(run, 'lease lost', true);
        else {
          this.watch.held(run, sentAt);
          if (h.cancel_requested) this.outcomes.cancelLocal(run);
        }
      }
    } catch (error) {
      core.logger.warn({ err: error }, 'renewing task leases failed');
    } finally {
      this.renewing = false;
    }
  }

  /** Returns tasks whose lease ran out (their node died) to pending, through the machine's EXPIRE. */
  async reap(): Promise<void> {
    const { core } = this;
    try {
      let reaped = 0;
      for (const row of await core.store.expired(100)) {
        // Our own live run: its renewal is only late; renewal decides whether it still holds the task.
        if (core.runs.get(row.id)?.claimId === row.claim_id) continue;
        const d = decide('running', core.factsOf(row), { type: 'EXPIRE' });
        const now = new Date().toISOString();
        const patch = columnsFor(d, { now, progress: row.progress });
        const fence = {
          status: 'running' as const,
          claimId: row.claim_id,
          leaseExpired: true,
          cancelRequested: row.cancel_requested,
        };
        const [applied] = await core.store.change([{ id: row.id, fence, patch }]);
        if (!applied) continue;
        reaped++;
        core.emit(row, patch);
        core.logger.warn(
          { task_id: row.id, worker_id: row.worker_id, status: d.status },
          'task lease expired; its node stopped renewing it',
        );
        const again = d.status === 'pending' ? 'will run again' : 'cancelled';
        await core
          .sinkFor(row.log_backend)
          ?.append([
            {
              id: uuidv7(),
              task_id: row.id,
              level: 'warn',
              message: `node ${row.worker_id ?? '?'} stopped renewing the lease; task ${again}`,
              created_at: now,
            },
          ])
          .catch(() => {});
      }
      if (reaped) {
        core.wake();
        core.announce();
      }
    } catch (error) {
      if (core.phase === 'running') core.logger.warn({ err: error }, 'reaping expired task leases failed');
    }
  }
}
