import type { Task } from './live-task.ts';

/** The badge colour of each task status, the same on every page. */
export const STATUS_COLORS: Record<Task['status'], string> = {
  pending: 'gray',
  running: 'blue',
  success: 'green',
  failed: 'red',
  cancelled: 'yellow',
};
