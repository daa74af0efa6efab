import type { EngineLogger, TaskJson } from './types.ts';

export type TaskChangeListener = (task: TaskJson) => void;

/**
 * Tells listeners on this node of every task change it wrote (created, a new status, new progress), after the
 * write committed, with the task as the API answers it. The live task events (docs/engine.md) record these.
 */
export class TaskChangeEmitter {
  private readonly listeners = new Set<TaskChangeListener>();

  constructor(private readonly logger: EngineLogger) {}

  onChange(listener: TaskChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(task: TaskJson): void {
    for (const listener of this.listeners) {
      try {
        listener(task);
      } catch (error) {
        // A listener's failure is its own: the engine's write has happened and goes on.
        this.logger.error({ err: error, task_id: task.id }, 'task change listener failed');
      }
    }
  }
}
