import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { inferRouterOutputs } from '@trpc/server';
import { useSubscription } from '@trpc/tanstack-react-query';
import type { AppRouter } from 'console-admin/client';
import { useTRPC } from '../api.ts';

export type Task = inferRouterOutputs<AppRouter>['tasks']['get'];

/**
 * One task, read once and then kept as the `tasks.events` subscription says it is: the task is never asked for
 * again. `onEvent` hears each change (the task page reads its log again then).
 */
export function useLiveTask(id: string | undefined, onEvent?: (task: Task) => void) {
  const trpc = useTRPC();
  const queries = useQueryClient();
  const input = { id: id ?? '' };
  const task = useQuery({ ...trpc.tasks.get.queryOptions(input), enabled: Boolean(id), staleTime: Infinity });
  const live = useSubscription(
    trpc.tasks.events.subscriptionOptions(id ? { task_id: id } : undefined, {
      enabled: Boolean(id),
      onData: ({ data }) => {
        queries.setQueryData(trpc.tasks.get.queryKey(input), data.task);
        onEvent?.(data.task);
      },
    }),
  );
  /** A mutation's answer is the task as it is now: kept without asking again. */
  const keep = (next: Task) => queries.setQueryData(trpc.tasks.get.queryKey({ id: next.id }), next);
  return { task, live: live.status === 'pending', keep };
}
