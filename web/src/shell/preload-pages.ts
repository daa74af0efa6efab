import { useEffect } from 'react';
import { can, type Me } from '../permissions.tsx';
import { LINKED_PAGES, PAGES, type PageDef } from '../routes.tsx';

type Loadable = Pick<PageDef, 'load'>;

/**
 * Fetches a page's code before it is opened; the router's own load later finds the module already there. A failed
 * fetch is left for that load to report.
 */
export const preloadPage = (page: Loadable) => void page.load().catch(() => undefined);

// Safari has no requestIdleCallback; a short timeout stands in.
const whenIdle = (run: () => void): (() => void) => {
  if (typeof requestIdleCallback === 'function') {
    const id = requestIdleCallback(run, { timeout: 1000 });
    return () => cancelIdleCallback(id);
  }
  const id = setTimeout(run, 200);
  return () => clearTimeout(id);
};

/**
 * Once the shell is shown and the browser is idle, the code of every page the caller may open is fetched, so a
 * first visit waits only for its data (docs/decisions.md "Web console: page code fetched ahead").
 */
export function usePreloadPages(me: Me | undefined) {
  useEffect(() => {
    if (!me) return;
    return whenIdle(() => {
      for (const page of [...PAGES, ...LINKED_PAGES]) if (can(me, page.permission)) preloadPage(page);
    });
  }, [me]);
}
