// Writes client.ts: the router's type as a frontend sees it, spelled out procedure by procedure.
//
// The router's own type carries its context (services, the database, knex, Node's types), so a frontend that
// imported it would type-check the whole server under its own settings. The compiler already knows every
// procedure's input and output; printed out, they need nothing but @trpc/server's public types.
//
//   node --import tsx tools/client-types.ts          rewrites client.ts
//   node --import tsx tools/client-types.ts --check  exits 1 when client.ts no longer matches the router
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ROUTER = `${ROOT}routers/app-router.ts`;
export const CLIENT_FILE = `${ROOT}client.ts`;

const HEADER = `// Generated from routers/app-router.ts by tools/client-types.ts (\`npm run client-types\`): do not edit.
// The package's \`console-admin/client\` entry: the types a frontend builds its tRPC client from, with nothing of
// the server reachable from them (see docs/decisions.md, "Typed frontends").
import type { inferRouterInputs, inferRouterOutputs, TRPCBuiltRouter, TRPCMutationProcedure, TRPCQueryProcedure, TRPCSubscriptionProcedure } from '@trpc/server';
import type { TrackedData } from '@trpc/server/unstable-core-do-not-import';
`;

const PROCEDURE_TYPES: Record<string, string> = {
  query: 'TRPCQueryProcedure',
  mutation: 'TRPCMutationProcedure',
  subscription: 'TRPCSubscriptionProcedure',
};

/** The text of client.ts for the router as it is now. */
export function clientTypes(): string {
  const config = ts.getParsedCommandLineOfConfigFile(
    `${ROOT}tsconfig.json`,
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
  );
  if (!config) throw new Error('tsconfig.json could not be read');
  const program = ts.createProgram([ROUTER], { ...config.options, noEmit: true });
  const checker = program.getTypeChecker();
  const module = checker.getSymbolAtLocation(program.getSourceFile(ROUTER)!)!;
  const appRouter = checker.getExportsOfModule(module).find((s) => s.name === 'appRouter');
  if (!appRouter) throw new Error('routers/app-router.ts exports no appRouter');

  const property = (type: ts.Type, name: string): ts.Type | undefined => {
    const symbol = checker.getPropertyOfType(type, name);
    return symbol && checker.getTypeOfSymbol(symbol);
  };
  const member = (type: ts.Type, name: string): ts.Type => {
    const found = property(type, name);
    if (!found) throw new Error(`the router's type has no ${name} where one was expected`);
    return found;
  };
  const text = (type: ts.Type, indent: string): string => {
    // Named types from the server would need their modules: the printer spells every type out instead.
    const node = checker.typeToTypeNode(
      type,
      undefined,
      ts.NodeBuilderFlags.NoTruncation | ts.NodeBuilderFlags.InTypeAlias | ts.NodeBuilderFlags.MultilineObjectLiterals,
    );
    if (!node) throw new Error('a procedure type could not be printed');
    const printed = ts
      .createPrinter({ removeComments: true })
      .printNode(ts.EmitHint.Unspecified, node, ts.createSourceFile('x.ts', '', ts.ScriptTarget.Latest));
    if (/\bimport\(/.test(printed)) throw new Error(`a procedure type refers to server code: ${printed.slice(0, 200)}`);
    // The printer indents by four; the rest of the file by two.
    return printed.replace(/\n((?: {4})*)/g, (_m, lead: string) => `\n${indent}${'  '.repeat(lead.length / 4)}`);
  };
  const procedure = (type: ts.Type, indent: string): string => {
    const def = member(type, '_def');
    const kind = checker.typeToString(member(def, 'type')).replaceAll('"', '');
    const types = member(def, '$types');
    const inner = `${indent}  `;
    return `${PROCEDURE_TYPES[kind]}<{\n${inner}input: ${text(member(types, 'input'), inner)};\n${inner}output: ${text(member(types, 'output'), inner)};\n${inner}meta: object;\n${indent}}>`;
  };
  const record = (type: ts.Type, indent: string): string => {
    const inner = `${indent}  `;
    const lines = checker.getPropertiesOfType(type).map((p) => {
      const value = checker.getTypeOfSymbol(p);
      const def = property(value, '_def');
      const isProcedure = def !== undefined && property(def, 'procedure') !== undefined;
      const body = isProcedure ? procedure(value, inner) : record(def ? member(def, 'record') : value, inner);
      return `${inner}${p.name}: ${body};`;
    });
    return `{\n${lines.join('\n')}\n${indent}}`;
  };

  const routerType = checker.getTypeOfSymbol(appRouter);
  const routerDef = member(routerType, '_def');
  const errorShape = member(member(member(routerDef, '_config'), '$types'), 'errorShape');
  return `${HEADER}
/** What a failed call carries: tRPC's own fields, plus the service's code (\`appCode\`, E4011...) and message. */
export type ErrorShape = ${text(errorShape, '')};

type Root = { ctx: object; meta: object; errorShape: ErrorShape; transformer: false };

/** The type \`createTRPCClient<AppRouter>\` is built from. */
export type AppRouter = TRPCBuiltRouter<Root, ${record(member(routerDef, 'record'), '')}>;

/** Every procedure's input, by path: \`RouterInputs['users']['create']\`. */
export type RouterInputs = inferRouterInputs<AppRouter>;

/** Every procedure's output, by path: \`RouterOutputs['users']['list']\`. */
export type RouterOutputs = inferRouterOutputs<AppRouter>;
`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const fresh = clientTypes();
  if (!process.argv.includes('--check')) writeFileSync(CLIENT_FILE, fresh);
  else if (readFileSync(CLIENT_FILE, 'utf8') !== fresh) {
    console.error('client.ts does not match the router: run `npm run client-types`');
    process.exit(1);
  }
}
