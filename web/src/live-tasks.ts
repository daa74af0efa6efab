import type { inferRouterOutputs } from '@trpc/server';
import { useSubscription } from '@trpc/tanstack-react-query';
import type { AppRouter } from 'console-admin/client';
import { createContext, useContext, useState } from 'react';
import { useTRPC } from './api.ts';

export type LiveTask = inferRouterOutputs<AppRouter>['tasks']['get'];

/**
 * The tasks the caller sees as the `tasks.events` subscription tells them: it opens with the current ones (pending,
 * running, recently finished), then every change. Never polled. `enabled` false (no `task:list`) opens nothing.
 */
export interface LiveTasks {
  tasks: LiveTask[];
  live: boolean;
}

export function useLiveTasks(enabled: boolean): LiveTasks {
  const trpc = useTRPC();
  const [tasks, setTasks] = useState<ReadonlyMap<string, LiveTask>>(new Map());
  const sub = useSubscription(
    trpc.tasks.events.subscriptionOptions(undefined, {
      enabled,
      onData: ({ data }) => setTasks((known) => new Map(known).set(data.task.id, data.task)),
    }),
  );
  return { tasks: [...tasks.values()], live: sub.status === 'pending' };
}

/** The shell's stream, for the pages under it (one stream per tab). */
export const LiveTasksContext = createContext<LiveTasks>({ tasks: [], live: false });

export const useSharedLiveTasks = (): LiveTasks => useContext(LiveTasksContext);
