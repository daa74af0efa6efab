import { createContext, useContext } from 'react';
import type { inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from 'console-admin/client';

export type Me = inferRouterOutputs<AppRouter>['auth']['me'];

export const MeContext = createContext<Me | undefined>(undefined);

/** The signed-in user, inside the shell. */
export function useMe(): Me {
  const me = useContext(MeContext);
  if (!me) throw new Error('useMe outside the shell');
  return me;
}

/** Whether the user holds a permission; the global admin role holds them all (as the service decides). */
export const can = (me: Me, code: string | undefined): boolean =>
  !code || me.permissions.includes(code) || me.roles.some((r) => r.name === 'admin');

export function useCan(): (code: string) => boolean {
  const me = useMe();
  return (code) => can(me, code);
}
