import { useSyncExternalStore } from 'react';
import { session } from './session.ts';

// The organization the console acts in (sent as X-Scope-OrgID), per tab like the token; none means global.
const STORAGE_KEY = 'console.org';
let current: string | undefined = sessionStorage.getItem(STORAGE_KEY) ?? undefined;
const listeners = new Set<() => void>();

function set(next: string | undefined) {
  if (next === current) return;
  current = next;
  if (next) sessionStorage.setItem(STORAGE_KEY, next);
  else sessionStorage.removeItem(STORAGE_KEY);
  for (const listener of listeners) listener();
}

export const orgScope = {
  get: () => current,
  set,
  subscribe(listener: () => void) {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};

// The next user signing in in this tab starts outside any organization.
session.subscribe(() => {
  if (!session.token()) set(undefined);
});

export function useOrgScope(): string | undefined {
  return useSyncExternalStore(orgScope.subscribe, orgScope.get);
}
