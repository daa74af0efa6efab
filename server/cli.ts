import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { stringify } from 'yaml';
import { startChangeFeed } from '../db/change-feed.ts';
import { openDatabase } from '../db/database.ts';
import { migrations } from '../db/migrations/index.ts';
import { resetPasswordByUsername } from '../routers/auth/bootstrap.ts';
import { SESSIONS_CHANNEL, USERS_CHANNEL } from '../routers/auth/identity.ts';
import { PasswordHasher } from '../routers/auth/password-hash.ts';
import { describeVerification, verifyAuditCommand } from './audit-verify-command.ts';
import { ConfigError, loadConfig } from './config/load.ts';
import { maskedConfig } from './config/masked.ts';
import type { ConsoleConfig } from './config/schema.ts';
import { createConsole } from './console.ts';
import { databaseOptions } from './database-options.ts';
import { copyKeyFile } from './encrypt-key.ts';
import { createLogger } from './logger.ts';
import { VERSION } from './version.ts';

interface Command {
  usage: string;
  about: string;
}

/** Each command's usage and what it does (lines of at most 100 columns): `console <command> --help` prints its entry. */
const COMMANDS: Record<string, Command> = {
  serve: { usage: 'serve', about: 'Run the HTTP service (the default command).' },
  migrate: { usage: 'migrate', about: 'Apply the migrations that are due, name each, and exit.' },
  'admin reset-password': {
    usage: 'admin reset-password [--username NAME] [--password PW]',
    about: 'Set a new password, generated and printed when not given; PW must meet password_min_length.',
  },
  backup: {
    usage: 'backup FILE [--force]',
    about:
      'Copy the SQLite database to FILE (mode 0600) while it serves, and its key file beside FILE; an\n' +
      'existing FILE only with --force. Progress on stderr. PostgreSQL, MySQL, ClickHouse: their own tools.',
  },
  'audit verify': {
    usage: 'audit verify [--checkpoints FILE]',
    about:
      'Verify the audit hash chain in the database against its signed checkpoints, or those of FILE\n' +
      '(audit.checkpoint_path). Exit 1 when it is broken, naming the first broken seq.',
  },
  'config check': {
    usage: 'config check',
    about:
      'Validate the configuration as serve reads it (file, environment, flags) and print the effective\n' +
      'one, secrets shown as ***.',
  },
};

const OPTIONS = `Options of every command:
  --config FILE          configuration file (default ./config.yaml when present)
  --section.key value    any configuration key, e.g. --server.port 9090 --database.driver postgres
  --help                 this help

Exit codes:
  0  success (serve: stopped by SIGINT or SIGTERM after draining)
  1  failure, its reason on stderr (a configuration mistake: one line naming the flag or key)`;

const indent = (text: string) => text.replace(/^/gm, '    ');

const USAGE = `Usage: console <command> [--config FILE] [--section.key value ...]

Commands:
${Object.values(COMMANDS)
  .map((c) => `  ${c.usage}\n${indent(c.about)}`)
  .join('\n')}
  --version
    Print the version.

${OPTIONS}`;

const commandHelp = (c: Command) =>
  `Usage: console ${c.usage} [--config FILE] [--section.key value ...]\n\n${c.about}\n\n${OPTIONS}`;

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
  work: (
    db: ReturnType<typeof openDatabase>,
    hasher: PasswordHasher,
    applied: string[],
    config: ConsoleConfig,
  ) => Promise<void>,
): Promise<void> {
  const config = loadConfig({ argv, env: process.env });
  const logger = createLogger({
    level: config.log.level,
    format: config.log.format,
    path: '',
    mode: config.server.mode,
    // A command's stdout is its answer (a password, the migrations applied); its log goes beside it.
    destination: process.stderr,
  });
  const db = openDatabase(databaseOptions(config), logger);
  try {
    const applied = await db.migrate();
    await work(db, new PasswordHasher(config.security.scrypt_cost), applied, config);
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
    await db.backup(file, { force, progress: backupProgress(process.stderr) });
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

/**
 * The copy's progress on `out`: one line rewritten in place on a terminal, else a line each tenth (a log
 * collector keeps every line). Silent for a copy made in one step (a small database).
 */
function backupProgress(out: NodeJS.WriteStream): (copied: number, total: number) => void {
  let shown = -1;
  return (copied, total) => {
    const percent = Math.floor((copied / total) * 100);
    if (shown === -1 && copied === total) return;
    const due = out.isTTY ? percent !== shown : Math.floor(percent / 10) > Math.floor(shown / 10);
    if (!due) return;
    shown = percent;
    const line = `backup: ${percent}% (${copied} of ${total} pages)`;
    if (!out.isTTY) out.write(`${line}\n`);
    else out.write(`\r${line}${copied === total ? '\n' : ''}`);
  };
}

async function migrate(argv: string[]): Promise<void> {
  return withDatabase(argv, async (_db, _hasher, applied) => {
    if (applied.length === 0) {
      console.log(`No migrations were due (${migrations.length} applied before).`);
      return;
    }
    console.log(`Applied ${applied.length} migration${applied.length === 1 ? '' : 's'}:`);
    for (const name of applied) console.log(`  ${name}`);
  });
}

/** Validates the configuration exactly as `serve` loads it, and prints the outcome with secrets masked. */
function configCheck(argv: string[]): void {
  const flagged = takeFlag(argv, 'config');
  const config = loadConfig({ argv, env: process.env, configFile: flagged });
  const file = flagged ?? (existsSync('config.yaml') ? 'config.yaml' : undefined);
  console.error(`console: configuration is valid (${file ? `file ${file}` : 'no file'}, environment, flags)`);
  console.log(
    `# Effective configuration (durations in milliseconds, secrets as ***)\n${stringify(maskedConfig(config))}`,
  );
}

async function main(args: string[]): Promise<void> {
  const argv = [...args];
  if (argv[0] === '--version') {
    console.log(VERSION);
    return;
  }
  if (['help', '--help', '-h'].includes(argv[0] ?? '')) {
    console.log(USAGE);
    return;
  }
  const first = argv[0]?.startsWith('--') || argv.length === 0 ? 'serve' : argv.shift()!;
  // Two-word commands (admin reset-password, config check) are named by both words.
  const command = COMMANDS[first] || argv[0] === undefined || argv[0].startsWith('-') ? first : `${first} ${argv[0]}`;
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(COMMANDS[command] ? commandHelp(COMMANDS[command]) : USAGE);
    return;
  }
  if (command !== first) argv.shift();
  if (command === 'serve') return serve(argv);
  if (command === 'backup') return backup(argv);
  if (command === 'migrate') return migrate(argv);
  if (command === 'config check') return configCheck(argv);
  if (command === 'audit verify') {
    const checkpoints = takeFlag(argv, 'checkpoints');
    return withDatabase(argv, async (db, _hasher, _applied, config) => {
      const logger = createLogger({ level: 'error', format: 'json', path: '', mode: 'release' });
      const result = await verifyAuditCommand(config, db, logger, checkpoints);
      console.log(describeVerification(result));
      if (result.broken) process.exitCode = 1;
    });
  }
  if (command === 'admin reset-password') {
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
  throw new ConfigError(`unknown command "${[first, ...argv].join(' ')}"\n\n${USAGE}`);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  // A configuration or usage mistake is one clear line; anything else is a real failure worth its details.
  if (error instanceof ConfigError) console.error(error.message);
  else console.error(`console: ${(error as Error).message}`);
  process.exit(1);
});
