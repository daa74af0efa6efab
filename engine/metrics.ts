import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** The task metrics of docs/engine.md, registered into the console's registry. */
export function createTaskMetrics(registry: Registry, pendingCount: () => Promise<number>) {
  const registers = [registry];
  return {
    created: new Counter({
      name: 'task_created_total',
      help: 'Tasks created',
      labelNames: ['type', 'category'],
      registers,
    }),
    started: new Counter({
      name: 'task_started_total',
      help: 'Task runs started on this node',
      labelNames: ['type', 'category'],
      registers,
    }),
    completed: new Counter({
      name: 'task_completed_total',
      help: 'Tasks that reached success, failed or cancelled (automatic retries are not completions)',
      labelNames: ['type', 'category', 'status'],
      registers,
    }),
    overflow: new Counter({
      name: 'task_queue_overflow_total',
      help: 'Tasks created while this node could not start them at once (pool full or no runner for the type); they wait pending',
      labelNames: ['category'],
      registers,
    }),
    queueLength: new Gauge({
      name: 'task_queue_length',
      help: 'Pending tasks (all nodes)',
      registers,
      async collect() {
        this.set(await pendingCount());
      },
    }),
    running: new Gauge({ name: 'task_running', help: 'Tasks running on this node', labelNames: ['type'], registers }),
    duration: new Histogram({
      name: 'task_run_duration_seconds',
      help: 'Run time of one attempt, by outcome (retry = failed and will run again)',
      labelNames: ['type', 'status'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900],
      registers,
    }),
  };
}

export type TaskMetrics = ReturnType<typeof createTaskMetrics>;
