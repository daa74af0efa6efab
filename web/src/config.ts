// Where this page lives and where the service's API is, as the service wrote them into the page when it served it
// (server/http/web-console.ts); the same build works at any base path and behind any proxy prefix.

/** The router's basename: the path of <base href>, without its trailing slash. */
export const basename = new URL(document.baseURI).pathname.replace(/\/$/, '');

/** The service root (ends with /): /api, /trpc and /healthz are under it. */
export const serviceRoot = document.querySelector('meta[name="console-root"]')?.getAttribute('content') ?? '/';
