import type { TaskRow } from '../db/tasks/row.ts';
import type { EngineCore } from './core.ts';
import type { LeaseWatch } from './lease-watch.ts';
import type { TaskEvent } from './machine.ts';
import { errorText, type Outcomes } from './outcomes.ts';
import { runWrites } from './run-writes.ts';
import { TaskRun } from './run.ts';
import type { Runner } from './types.ts';

/** Runs the tasks this node claimed: one TaskRun each, its runner awaited, its outcome handed to Outcomes. */
export class Execution {
  private readonly writes: ReturnType<typeof runWrites>;

  constructor(
    private readonly core: EngineCore,
    private readonly outcomes: Outcomes,
    private readonly leases: LeaseWatch,
  ) {
    this.writes = runWrites(core);
  }

  /** Starts a task this node just claimed, by a statement sent at `sentAt` (its lease counts from then). */
  launch(row: TaskRow, sentAt: number): void {
    const { core } = this;
    const registration = core.runners.get(row.type)!;
    const span = core.deps.tracer?.startRun({
      id: row.id,
      type: row.type,
      category: row.category,
      attempt: row.retry_count + 1,
    });
    const run = new TaskRun(row, row.claim_id!, core.factsOf(row), {
      writes: this.writes,
      artifacts: core.artifacts,
      logger: core.logger,
      sink: core.sinkFor(row.log_backend),
      span,
    });
    core.runs.set(row.id, run);
    this.leases.held(run, sentAt);
    core.metrics.started.inc({ type: row.type, category: row.category });
    // From the claimed row, as the API shows it: no query. A retry's wait is its backoff, not the queue's.
    if (row.retry_count === 0 && row.started_at)
      core.metrics.queueWait.observe(
        { type: row.type },
        (Date.parse(row.started_at) - Date.parse(row.created_at)) / 1000,
      );
    core.metrics.running.inc({ type: row.type });
    core.emit(row);
    run.done = span
      ? span.within(() => this.execute(run, registration.runner))
      : this.execute(run, registration.runner);
  }

  private async execute(run: TaskRun, runner: Runner): Promise<void> {
    const { core } = this;
    let event: TaskEvent;
    let result: string | null = null;
    let error: string | null = null;
    try {
      const value = await runner(run.context());
      result = value === undefined ? null : (JSON.stringify(value) ?? null);
      event = { type: 'SUCCEED' };
    } catch (e) {
      error = errorText(e);
      event = { type: 'FAIL' };
    }
    run.settle();
    const outcome = (run.detached ? run.flushLogs() : this.finished(run, event, result, error)).catch((e: unknown) =>
      core.logger.error({ err: e, task_id: run.row.id }, 'finishing a task failed'),
    );
    // The slot frees once the runner has returned: the outcome follows within milliseconds (finishing keeps
    // renewals off it), and claiming the next tasks meanwhile overlaps the two round trips.
    core.runs.delete(run.row.id);
    core.ahead.ran(run.row.type, performance.now() - run.startedAt);
    this.leases.forget(run);
    core.metrics.running.dec({ type: run.row.type });
    run.deps.span?.end(run.detached ? 'detached' : (run.outcome ?? 'unknown'), error);
    core.freed();
    await outcome;
  }

  /** The outcome's bookkeeping once it is written: metrics, and a wake-up when the task retries later. */
  private async finished(run: TaskRun, event: TaskEvent, result: string | null, error: string | null): Promise<void> {
    const { core } = this;
    const { row } = run;
    const seconds = (performance.now() - run.startedAt) / 1000;
    const d = await this.outcomes.finish(run, event, result, error);
    if (!d) {
      core.logger.warn({ task_id: row.id }, 'task was taken over by another node; this run’s outcome is dropped');
      return;
    }
    core.metrics.duration.observe({ type: row.type, status: d.status === 'pending' ? 'retry' : d.status }, seconds);
    if (d.status !== 'pending') {
      core.metrics.completed.inc({ type: row.type, category: row.category, status: d.status });
      return;
    }
    setTimeout(() => core.wake(), d.facts.retryDelayMs + 5).unref();
    core.announce();
  }
}
