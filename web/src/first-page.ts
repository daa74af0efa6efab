import type { EnsureQueryDataOptions, QueryKey } from '@tanstack/react-query';
import { createTRPCOptionsProxy } from '@trpc/tanstack-react-query';
import type { AppRouter } from 'console-admin/client';
import { queryClient, trpcClient } from './api.ts';
import { can } from './permissions.tsx';

/** The queries' options outside React (route loaders), the same keys as `useTRPC()` gives. */
export const trpcOptions = createTRPCOptionsProxy<AppRouter>({ client: trpcClient, queryClient });

/**
 * How long a list read by the loader counts as fresh: the page's own query, mounted right after, takes it as it
 * is instead of asking again. Later visits still read again (their cached rows shown meanwhile).
 */
export const JUST_READ_MS = 2000;

/**
 * A route loader that reads a list's first page before the page is shown, unless an earlier visit left it in the
 * cache: the router keeps the previous page up meanwhile, so the list never appears as an empty table that fills
 * a moment later. Only for a caller known to hold `permission` (a refused read would be an error in the console);
 * a failure is left to the page's own query to show.
 */
export function readFirst<Data, Error, Key extends QueryKey>(
  permission: string,
  options: EnsureQueryDataOptions<Data, Error, Data, Key>,
) {
  return async (): Promise<null> => {
    const me = queryClient.getQueryData(trpcOptions.auth.me.queryKey());
    if (me && can(me, permission)) await queryClient.ensureQueryData(options).catch(() => undefined);
    return null;
  };
}
