import { useQuery } from '@tanstack/react-query';
import type { inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from 'console-admin/client';
import { useTRPC } from './api.ts';

export type Organization = inferRouterOutputs<AppRouter>['organizations']['mine']['data'][number];

// One page of the largest size: the switcher and the pages' organization pickers share this one query.
export const MY_ORGS_PAGE = 100;

/** The organizations the caller may act in (an administrator's every one), and each one's name by id. */
export function useMyOrganizations() {
  const trpc = useTRPC();
  const query = useQuery(trpc.organizations.mine.queryOptions({ page_size: MY_ORGS_PAGE }));
  const orgs = query.data?.data ?? [];
  return { query, orgs, nameOf: (id: string) => orgs.find((o) => o.id === id)?.name ?? id };
}
