import { existsSync, readFileSync } from 'node:fs';

type Json = Record<string, unknown>;

// `npm run build` writes the document beside the compiled code (dist/openapi.json), so a compiled server never
// loads trpc-to-openapi (~12 MB of resident memory for one start-up computation).
const BUILT = new URL('../../openapi.json', import.meta.url);
const COMPILED = import.meta.url.endsWith('.js');

/** The OpenAPI document with this start's version and base URL (`server.root_url` + `/api`). */
export async function loadOpenApiDocument(version: string, baseUrl: string): Promise<Json> {
  if (COMPILED && existsSync(BUILT)) {
    const document = JSON.parse(readFileSync(BUILT, 'utf8')) as Json;
    return { ...document, info: { ...(document.info as Json), version }, servers: [{ url: baseUrl }] };
  }
  const { serviceDocument } = await import('./openapi.ts');
  return serviceDocument(version, baseUrl);
}
