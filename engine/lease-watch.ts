import type { TaskRun } from './run.ts';

/**
 * How long this node can vouch for each of its runs' leases without asking the database. A lease written by
 * a statement sent at `sentAt` lasts at least until `sentAt + ttl` (the statement ran after it was sent, and
 * other nodes' reapers measure the lease on the database's clock from then), so when renewals fail (the
 * database is down or unreachable) the run is stopped at `abortAfterMs` (`task.lease_abort_at` of the lease,
 * three quarters by default): its runner has the rest of the lease to wind down before another node may take
 * the task over, and the two never run at once.
 * Times are monotonic (performance.now), so a wall-clock step cannot stretch a lease.
 */
export class LeaseWatch {
  private readonly timers = new Map<TaskRun, NodeJS.Timeout>();

  constructor(
    private readonly abortAfterMs: number,
    private readonly onLapse: (run: TaskRun) => void,
  ) {}

  /** The run's lease was written (claimed or renewed) by a statement sent at `sentAt` (performance.now()). */
  held(run: TaskRun, sentAt: number): void {
    clearTimeout(this.timers.get(run));
    const stopAt = sentAt + this.abortAfterMs;
    const timer = setTimeout(
      () => {
        this.timers.delete(run);
        this.onLapse(run);
      },
      Math.max(0, stopAt - performance.now()),
    );
    this.timers.set(run, timer.unref());
  }

  /** The run is over: nothing to watch. */
  forget(run: TaskRun): void {
    clearTimeout(this.timers.get(run));
    this.timers.delete(run);
  }
}
