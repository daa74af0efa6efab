import { dirname, resolve } from 'node:path';
import { startChangeFeed } from '../db/change-feed.ts';
import { openDatabase } from '../db/database.ts';
import { resetPasswordByUsername } from '../routers/auth/bootstrap.ts';
import { SESSIONS_CHANNEL, USERS_CHANNEL } from '../routers/auth/identity.ts';
import { PasswordHasher } from '../routers/auth/password-hash.ts';
import { ConfigError, loadConfig } from './config/load.ts';
import { createConsole } from './console.ts';
import { databaseOptions } from './database-options.ts';
import { copyKeyFile } from './encrypt-key.ts';
import { createLogger } from './logger.ts';
import { VERSION } from './version.ts';

const USAGE = `Usage: console <command> [--config FILE] [--section.key value ...]

Commands:
  serve                                  run the HTTP service (default)
  migrate                                apply database migrations and exit
  admin reset-password [--username NAME] [--password PW]
                                         set a new password (generated and printed when not given; PW
                                         must meet the password_min_length setting)
  backup FILE [--force]                  copy the SQLite database to FILE (mode 0600) while it serves, and its
                                         key file beside FILE; an existing FILE only with --force
                                         (PostgreSQL, MySQL, ClickHouse: their own dump tools)
  --version                              print the version

Every configuration key can be given as a flag, e.g. --server.port 9090 --database.driver postgres.`;

/** Takes `--name value` / `--name=value` out of argv. */
function takeFlag(argv: string[], name: string): string | undefined {
  const i = argv.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (i === -1) return undefined;
  const [flag] = argv.splice(i, 1);
  return flag!.includes('=') ? flag!.slice(flag!.indexOf('=') + 1) : argv.splice(i, 1)[0];
}

async function serve(argv: string[]): Promise<void> {
  const c = await createConsole({ argv });
  const listening = c.listen();
  // npm forwards the signal its process group already got, so a second one is usual: it changes nothing.
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    c.logger.info({ signal }, 'shutting down');
    listening
      .catch(() => {})
      .then(() => c.close())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          c.logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  // Before "console listening" is logged: a signal from then on always drains, never kills.
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  await listening;
}

async function withDatabase(
  argv: string[],
  work: (db: ReturnType<typeof openDatabase>, hasher: PasswordHasher) => Promise<void>,
): Promise<void> {
  const config = loadConfig({ argv, env: process.env });
  const logger = createLogger({
    level: config.log.level,
    format: config.log.format,
    path: '',
    mode: config.server.mode,
  });
  const db = openDatabase(databaseOptions(config), logger);
  try {
    await db.migrate();
    await work(db, new PasswordHasher(config.security.scrypt_cost));
  } finally {
    await db.close();
  }
}

/** Takes the switch `--name` out of argv; answers whether it was there. */
function takeSwitch(argv: string[], name: string): boolean {
  const i = argv.indexOf(`--${name}`);
  if (i !== -1) argv.splice(i, 1);
  return i !== -1;
}

/** An online copy of the SQLite database, with the generated key that opens its secrets put beside it. */
async function backup(argv: string[]): Promise<void> {
  const force = takeSwitch(argv, 'force');
  const file = argv[0]?.startsWith('--') ? undefined : argv.shift();
  if (!file) throw new ConfigError(`backup needs the file to write: console backup FILE [--force]\n\n${USAGE}`);
  const config = loadConfig({ argv, env: process.env });
  const options = databaseOptions(config);
  // No migrations: a backup taken before an upgrade must hold the schema the previous version runs on.
  const db = openDatabase(options, createLogger({ level: 'error', format: 'json', path: '', mode: 'release' }));
  try {
    await db.backup(file, { force });
  } finally {
    await db.close();
  }
  console.log(`Database copied to ${file}.`);
  if (config.global.encrypt_key) {
    console.log('Stored secrets are sealed with global.encrypt_key: keep it with the backup.');
    return;
  }
  const folder = db.dialect.localKeyFolder?.(options);
  const key = folder ? copyKeyFile(folder, dirname(resolve(file))) : undefined;
  console.log(
    key
      ? `Key file copied to ${key}: keep it with the backup, it opens the stored secrets.`
      : 'No key file to copy: no secret is stored yet.',
  );
}

async function main(args: string[]): Promise<void> {
  const argv = [...args];
  if (argv[0] === '--version') {
    console.log(VERSION);
    return;
  }
  const command = argv[0]?.startsWith('--') || argv.length === 0 ? 'serve' : argv.shift()!;
  if (command === 'help' || argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE);
    return;
  }
  if (command === 'serve') return serve(argv);
  if (command === 'backup') return backup(argv);
  if (command === 'migrate') return withDatabase(argv, async () => console.log('migrations are up to date'));
  if (command === 'admin' && argv[0] === 'reset-password') {
    argv.shift();
    const username = takeFlag(argv, 'username');
    const password = takeFlag(argv, 'password');
    return withDatabase(argv, async (db, hasher) => {
      const name = username ?? loadConfig({ argv, env: process.env }).bootstrap.admin_username;
      const set = await resetPasswordByUsername(db, hasher, name, password);
      if (!set) throw new ConfigError(`no user named "${name}"`);
      // Running nodes drop their cached sessions and user state.
      const feed = await startChangeFeed(
        db,
        createLogger({ level: 'error', format: 'json', path: '', mode: 'release' }),
      );
      await feed.publish(SESSIONS_CHANNEL);
      await feed.publish(USERS_CHANNEL);
      await feed.close();
      console.log(password ? `Password of "${name}" changed.` : `New password of "${name}": ${set}`);
    });
  }
  throw new ConfigError(`unknown command "${[command, ...argv].join(' ')}"\n\n${USAGE}`);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  // A configuration or usage mistake is one clear line; anything else is a real failure worth its details.
  if (error instanceof ConfigError) console.error(error.message);
  else console.error(`console: ${(error as Error).message}`);
  process.exit(1);
});
