// The package entry: what an application embedding Console imports.
export { createConsole, type Console, type ConsoleOptions } from './server/console.ts';
export { loadConfig, ConfigError } from './server/config/load.ts';
export type { ConsoleConfig, ConsoleConfigInput } from './server/config/schema.ts';
export type { AppRouter } from './routers/app-router.ts';
export * from './lib/errors.ts';
