import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * The task metrics of docs/engine.md, registered into the console's registry. `pendingByType` counts the pending
 * tasks of all nodes, once per scrape for both gauges that show it; `knownTypes` are shown at 0 when none waits.
 */
export function createTaskMetrics(
  registry: Registry,
  pendingByType: () => Promise<Map<string, number>>,
  knownTypes: () => Iterable<string>,
) {
  const registers = [registry];
  // The two gauges are collected together (prom-client reads every metric at once): they share one count.
  let counting: Promise<Map<string, number>> | undefined;
  const pending = () =>
    (counting ??= pendingByType().finally(() => {
      counting = undefined;
    }));
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
        let total = 0;
        for (const n of (await pending()).values()) total += n;
        this.set(total);
      },
    }),
    pendingByType: new Gauge({
      name: 'task_pending',
      help: 'Pending tasks by type (all nodes)',
      labelNames: ['type'],
      registers,
      async collect() {
        const counts = await pending();
        this.reset();
        for (const type of knownTypes()) this.set({ type }, 0);
        for (const [type, n] of counts) this.set({ type }, n);
      },
    }),
    queueWait: new Histogram({
      name: 'task_queue_wait_seconds',
      help: 'From a task created to its first run started (its created_at to its started_at)',
      labelNames: ['type'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
      registers,
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
