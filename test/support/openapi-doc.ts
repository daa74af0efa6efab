/** Reading a served or generated OpenAPI document in tests. */

type Json = Record<string, any>;

export interface Operation {
  method: string;
  path: string;
  key: string;
  op: Json;
}

export function operations(doc: Json): Operation[] {
  return Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => ['get', 'post', 'put', 'delete', 'patch'].includes(method))
      .map(([method, op]) => ({
        method: method.toUpperCase(),
        path,
        key: `${method.toUpperCase()} ${path}`,
        op: op as Json,
      })),
  );
}

/** Follows a local `$ref` (`#/components/...`); anything else is answered as it is. */
export function resolveRef(doc: Json, node: Json): Json {
  if (typeof node?.$ref !== 'string') return node;
  return (node.$ref as string)
    .slice(2)
    .split('/')
    .reduce((at: Json, part) => at[part], doc);
}
