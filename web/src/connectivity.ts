import { useSyncExternalStore } from 'react';
import { serviceRoot } from './config.ts';

// Set when a call could not reach the service (no answer, or a proxy's 502/503/504 without one of ours); a probe
// of /healthz every few seconds clears it, and then the page's data is fetched again.
const PROBE_MS = 3000;
let unreachable = false;
let probe: ReturnType<typeof setTimeout> | undefined;
const listeners = new Set<() => void>();
let onRecover: () => void = () => {};

function set(next: boolean) {
  if (next === unreachable) return;
  unreachable = next;
  for (const listener of listeners) listener();
  if (!next) onRecover();
}

async function check() {
  probe = undefined;
  const ok = await fetch(`${serviceRoot}healthz`, { cache: 'no-store' }).then(
    (r) => r.ok,
    () => false,
  );
  if (ok) set(false);
  else probe = setTimeout(check, PROBE_MS);
}

export const connectivity = {
  /** A call failed without reaching the service. */
  lost() {
    set(true);
    probe ??= setTimeout(check, PROBE_MS);
  },
  /** What to do once the service answers again (refetch what failed). */
  onRecover(callback: () => void) {
    onRecover = callback;
  },
  subscribe(listener: () => void) {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};

export function useUnreachable(): boolean {
  return useSyncExternalStore(connectivity.subscribe, () => unreachable);
}
