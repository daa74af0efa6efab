/**
 * The path a reverse proxy serves the service under, from `server.root_url` (`https://host/console` → `/console`;
 * none → ''): pages that name their own assets by absolute path (the web console, /docs) put it in front.
 */
export function proxyPrefix(rootUrl: string): string {
  return rootUrl ? new URL(rootUrl).pathname.replace(/\/+$/, '') : '';
}
