import type { ArtifactStore } from './artifacts.ts';
import { Claimer } from './claimer.ts';
import { Commands } from './commands.ts';
import { EngineCore, sleep, type EngineDeps } from './core.ts';
import type { TaskChangeEmitter } from './events.ts';
import { Execution } from './execute.ts';
import { Leases } from './leases.ts';
import type { LogSinks } from './log-sinks.ts';
import type { TaskMetrics } from './metrics.ts';
import { Notices } from './notices.ts';
import { Outcomes } from './outcomes.ts';
import { SETTING_MAX_CONCURRENT } from './settings.ts';
import type { CreateTask, Runner, RunnerOptions, TaskJson } from './types.ts';

export type { EngineDeps } from './core.ts';
export { TASK_CANCEL_CHANNEL, TASKS_CHANNEL } from './notices.ts';

/**
 * The task engine of one node (docs/engine.md). Pending tasks live in the database; a node claims as many as it
 * has free slots (`task_max_concurrent`), runs them, renews their leases and writes their outcome, every
 * transition decided by the task machine. Any node may create, cancel or retry any task; the change feed tells
 * the others. This class wires the parts (one file each) and is the public API.
 */
export class TaskEngine {
  readonly workerId: string;
  readonly logSinks: LogSinks;
  readonly artifacts: ArtifactStore;
  readonly metrics: TaskMetrics;
  /** The change signal: every task this node created or changed, once stored (engine/events.ts). */
  readonly changes: TaskChangeEmitter;

  private readonly core: EngineCore;
  private readonly commands: Commands;
  private readonly outcomes: Outcomes;
  private readonly leases: Leases;
  private readonly notices: Notices;
  private readonly claimer: Claimer;
  private timers: NodeJS.Timeout[] = [];
  private stopping: Promise<void> | undefined;

  constructor(deps: EngineDeps) {
    const core = (this.core = new EngineCore(deps));
    this.outcomes = new Outcomes(core);
    this.leases = new Leases(core, this.outcomes);
    this.notices = new Notices(core, this.outcomes);
    const claimer = (this.claimer = new Claimer(
      core,
      new Execution(core, this.outcomes, this.leases.watch),
      this.outcomes,
    ));
    this.commands = new Commands(core, this.outcomes, this.notices, claimer);
    core.wake = () => claimer.wake();
    core.freed = () => claimer.freed();
    core.announce = () => this.notices.announce();
    this.workerId = core.workerId;
    this.logSinks = deps.logSinks;
    this.artifacts = core.artifacts;
    this.metrics = core.metrics;
    this.changes = core.changes;
    deps.settings.onChange((key, value) => {
      if (key !== SETTING_MAX_CONCURRENT) return;
      core.limit = value as number;
      core.logger.info({ limit: core.limit }, 'task pool resized');
      core.wake();
    });
  }

  /** Runs tasks of `type` on this node. Registering late is fine: waiting tasks of the type are picked up. */
  register(type: string, runner: Runner, options: RunnerOptions = {}): void {
    if (!type || type.length > 64) throw new Error('task type must be 1 to 64 characters');
    this.core.runners.set(type, { runner, options });
    this.core.wake();
  }

  registeredTypes(): string[] {
    return [...this.core.runners.keys()];
  }

  /** The number of tasks this node runs at most at once (the `task_max_concurrent` setting). */
  get concurrency(): number {
    return this.core.limit;
  }

  async start(): Promise<void> {
    const { core } = this;
    if (core.phase !== 'new') return;
    core.limit = core.deps.settings.get<number>(SETTING_MAX_CONCURRENT);
    core.phase = 'running';
    this.notices.listen();
    const every = (ms: number, fn: () => unknown) => this.timers.push(setInterval(fn, ms).unref());
    // The fallback for wake-ups that never arrive (another node's notice lost, a retry backoff ending elsewhere).
    every(core.config.pollIntervalMs, () => core.wake());
    every(core.config.leaseRenewIntervalMs, () => void this.leases.renew());
    every(core.config.reaperIntervalMs, () => void this.leases.reap());
    await this.leases.reap();
    core.wake();
  }

  /**
   * Graceful stop: claims nothing more and hands back the tasks claimed ahead, lets running tasks finish within
   * `timeoutMs`, then hands the rest back to pending (their signal fires) so another node, or this one after a
   * restart, runs them again.
   */
  stop(timeoutMs = this.core.config.shutdownTimeoutMs): Promise<void> {
    this.stopping ??= this.shutdown(timeoutMs);
    return this.stopping;
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    const { core } = this;
    if (core.phase !== 'running') {
      core.phase = 'stopped';
      return;
    }
    core.phase = 'stopping';
    // Tasks claimed and not started go back while the runs finish; neither wait outlasts the timeout by much.
    const handedBack = this.claimer.stop();
    const allDone = () => Promise.all([...core.runs.values()].map((r) => r.done));
    await Promise.race([allDone(), sleep(timeoutMs)]);
    const left = [...core.runs.values()].filter((r) => !r.detached && !r.finishing);
    await Promise.all(left.map((run) => this.outcomes.handBack(run)));
    await Promise.race([Promise.all([handedBack, allDone()]), sleep(1000)]);
    await core.writer.drain();
    await core.store
      .settle()
      .catch((error) => core.logger.error({ err: error }, 'storing task changes at stop failed'));
    for (const t of this.timers) clearInterval(t);
    this.notices.close();
    core.phase = 'stopped';
  }

  /** Answers the task JSON, or nothing when `fireKey` was already used (one task per key, ever). */
  create(input: CreateTask): Promise<TaskJson | undefined> {
    return this.commands.create(input);
  }

  /** Creates many tasks with few round trips (for bulk work); answers their ids in order. */
  createMany(inputs: CreateTask[]): Promise<string[]> {
    return this.commands.createMany(inputs);
  }

  get(id: string): Promise<TaskJson | undefined> {
    return this.commands.get(id);
  }

  /** Cancels a pending task at once; asks a running one to stop, on whichever node (docs/engine.md). */
  cancel(id: string): Promise<TaskJson> {
    return this.commands.cancel(id);
  }

  /** Runs a failed or cancelled task again (retry count reset). */
  retry(id: string): Promise<TaskJson> {
    return this.commands.retry(id);
  }

  /** Soft delete; a running task must be cancelled first. */
  remove(id: string): Promise<void> {
    return this.commands.remove(id);
  }

  /** A task's log lines from the backend they were written to, oldest first. */
  logs(id: string, offset: number, limit: number) {
    return this.commands.logs(id, offset, limit);
  }

  /** For tests and tools: a task the engine is running here. */
  isRunningHere(id: string): boolean {
    return this.core.runs.has(id);
  }
}
