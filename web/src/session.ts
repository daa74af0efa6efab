import { useSyncExternalStore } from 'react';

/** Why the last session ended, for the sign-in page to say so. */
export type EndReason = 'signed_out' | 'session_expired' | 'password_changed';

interface SessionState {
  token: string | undefined;
  ended: EndReason | undefined;
}

// In memory, and in sessionStorage so that a reload of the tab keeps it (never localStorage, never a URL): closing
// the tab ends it, and other sites' pages cannot read it.
const STORAGE_KEY = 'console.token';
let state: SessionState = { token: sessionStorage.getItem(STORAGE_KEY) ?? undefined, ended: undefined };
const listeners = new Set<() => void>();

function set(next: SessionState) {
  state = next;
  if (next.token) sessionStorage.setItem(STORAGE_KEY, next.token);
  else sessionStorage.removeItem(STORAGE_KEY);
  for (const listener of listeners) listener();
}

export const session = {
  token: () => state.token,
  start: (token: string) => set({ token, ended: undefined }),
  end: (reason: EndReason) => {
    if (state.token) set({ token: undefined, ended: reason });
  },
  /** What the sign-in page says next without a session to end (a password set through a reset link). */
  tell: (reason: EndReason) => set({ token: undefined, ended: reason }),
  subscribe(listener: () => void) {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};

export function useSession(): SessionState {
  return useSyncExternalStore(session.subscribe, () => state);
}
