import type { TaskRow } from '../db/tasks/row.ts';
import type { EngineCore } from './core.ts';
import { columnsFor, decide, type Decision, type TaskEvent, type TaskFacts } from './machine.ts';
import type { TaskRun } from './run.ts';

const CANCELLED = 'cancelled';
const MAX_ERROR = 4000;

export function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message || error.name : String(error);
  return text.length > MAX_ERROR ? `${text.slice(0, MAX_ERROR)}…` : text;
}

const abortError = (message: string) => Object.assign(new Error(message), { name: 'AbortError' });

/**
 * How a run ends on this node: its outcome decided by the machine and written fenced on the claim and the
 * cancel flag, a hand-back at shutdown, a cancel heard of, or the run detached when the node lost its task.
 */
export class Outcomes {
  constructor(private readonly core: EngineCore) {}

  /** Decides the run's outcome and queues its write; answers once it is written (or refused). */
  async finish(
    run: TaskRun,
    event: TaskEvent,
    result: string | null,
    error: string | null,
  ): Promise<Decision | undefined> {
    run.finishing = true;
    const before = run.facts;
    const d = decide('running', before, event);
    run.facts = d.facts;
    run.outcome = d.status === 'pending' ? 'retry' : d.status;
    if (d.status === 'pending')
      run.log('warn', `attempt failed, retrying in ${d.facts.retryDelayMs} ms`, {
        error,
        retry: d.facts.retryCount,
        max_retries: d.facts.maxRetries,
      });
    else if (d.status === 'failed') run.log('error', 'task failed', { error });
    else if (d.status === 'cancelled') run.log('warn', 'task cancelled');
    await run.flushLogs();
    return this.write(run, event, before, d, { result, error });
  }

  /**
   * Writes the outcome the machine decided from `before` and `event`, fenced on the claim and on the cancel flag
   * the run knew of. A cancel accepted meanwhile (on any node, the run not told yet) refuses the write; the
   * outcome is then decided again with the cancel, so a cancel answered 200 always ends the task `cancelled`.
   * A run ending cancelled leaves no artifact. Answers the decision written, or nothing when the run no
   * longer holds the task.
   */
  private async write(
    run: TaskRun,
    event: TaskEvent,
    before: TaskFacts,
    decided: Decision,
    o: { result?: string | null; error?: string | null },
  ): Promise<Decision | undefined> {
    let d = decided;
    for (;;) {
      const patch = columnsFor(d, Object.assign({ now: new Date().toISOString(), progress: run.progress }, o));
      // A cancel is stored before the machine hears of it, so the task ends cancelled whoever writes it: the file
      // goes first, and a task seen cancelled has none.
      const artifact = d.status === 'cancelled' ? run.row.artifact_file_key : null;
      if (artifact) {
        await this.removeArtifact(artifact, run.row.id);
        Object.assign(patch, { artifact_file_key: null, artifact_file_name: null });
      }
      const fence = { status: 'running' as const, claimId: run.claimId, cancelRequested: d.facts.cancelRequested };
      if (await this.core.writer.write({ id: run.row.id, fence, patch })) {
        this.core.emit(run.row, patch);
        return d;
      }
      if (d.facts.cancelRequested || !(await this.cancelledUnderClaim(run))) {
        run.lost = true;
        return undefined;
      }
      d = decide('running', { ...before, cancelRequested: true }, event);
      run.outcome = d.status === 'pending' ? 'retry' : d.status;
      run.log(
        'warn',
        'task cancelled: the cancel was accepted before the runner returned, so its outcome is discarded',
      );
      await run.flushLogs();
    }
  }

  /**
   * Whether the run still holds its task and a cancel was stored for it. Unknown (no database) counts as no: the
   * task then stays running until its lease expires, and the reaper ends it cancelled.
   */
  private async cancelledUnderClaim(run: TaskRun): Promise<boolean> {
    try {
      const [now] = await this.core.store.held([run.row.id]);
      return now?.status === 'running' && now.claim_id === run.claimId && now.cancel_requested;
    } catch (error) {
      this.core.logger.warn(
        { err: error, task_id: run.row.id },
        'reading whether a task was cancelled failed; its lease will decide',
      );
      return false;
    }
  }

  private async removeArtifact(key: string, taskId: string): Promise<void> {
    try {
      const file = await this.core.artifacts.find(key);
      if (file) await this.core.artifacts.remove([file]);
    } catch (error) {
      this.core.logger.warn({ err: error, task_id: taskId }, 'the artifact of a cancelled task could not be removed');
    }
  }

  /** A cancel of a task this node runs: the machine records it, and the runner's signal fires. */
  cancelLocal(run: TaskRun): void {
    if (run.finishing) return;
    run.facts = decide('running', run.facts, { type: 'CANCEL' }).facts;
    if (run.facts.cancelRequested && !run.abort.signal.aborted) run.abort.abort(abortError(CANCELLED));
  }

  /** This node no longer owns the run (`lost`: another may hold it now): stop the runner and write nothing for it. */
  detach(run: TaskRun, reason: string, lost: boolean): void {
    if (run.detached) return;
    run.detached = true;
    run.lost ||= lost;
    this.core.logger.warn({ task_id: run.row.id, reason }, 'task run detached');
    run.abort.abort(abortError(reason));
  }

  /**
   * A task claimed ahead and never started goes back to pending through the machine's RELEASE, fenced on its
   * claim; cancelled instead when a cancel is stored for it (known, or found by the fence refusing the write).
   */
  async release(row: TaskRow): Promise<void> {
    const { core } = this;
    for (const cancelRequested of row.cancel_requested ? [true] : [false, true]) {
      const d = decide('running', { ...core.factsOf(row), cancelRequested }, { type: 'RELEASE' });
      const patch = columnsFor(d, { now: new Date().toISOString(), progress: row.progress });
      const fence = { status: 'running' as const, claimId: row.claim_id, cancelRequested };
      if (await core.writer.write({ id: row.id, fence, patch })) {
        core.emit(row, patch);
        if (d.status === 'cancelled')
          core.metrics.completed.inc({ type: row.type, category: row.category, status: d.status });
        else {
          core.wake();
          core.announce();
        }
        return;
      }
    }
  }

  /** Shutdown: the run's task goes back to pending (or cancelled), for another node or a restart. */
  async handBack(run: TaskRun): Promise<void> {
    const before = run.facts;
    const d = decide('running', before, { type: 'RELEASE' });
    run.facts = d.facts;
    this.detach(run, 'node shutting down', false);
    run.log(
      'warn',
      d.status === 'pending' ? 'node shut down before the task finished; it will run again' : 'task cancelled',
    );
    await run.flushLogs();
    await this.write(run, { type: 'RELEASE' }, before, d, {});
  }
}
