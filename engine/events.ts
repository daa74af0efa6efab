import type { TaskJson } from '../lib/task-schema.ts';
import type { EngineLogger } from './types.ts';

export type TaskChangeListener = (task: TaskJson) => void;

/**
 * The engine's change signal: the task JSON (as `engine.get` answers it) after every write of this node that
 * created a task, changed its status or its progress, once the write is stored, and after a running task's log
 * lines are stored (at most once a second per run). Writes that did not apply
 * (their fence failed) and lease renewals emit nothing. A listener's error is logged, never thrown into the
 * engine.
 */
export class TaskChangeEmitter {
  private readonly listeners = new Set<TaskChangeListener>();

  constructor(private readonly logger?: EngineLogger) {}

  onChange(listener: TaskChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Whether anyone listens: the engine builds the task JSON only then. */
  get listening(): boolean {
    return this.listeners.size > 0;
  }

  emit(task: TaskJson): void {
    for (const listener of this.listeners) {
      try {
        listener(task);
      } catch (error) {
        this.logger?.error({ err: error, task_id: task.id }, 'a task change listener failed');
      }
    }
  }
}
