import type { Database } from '../db/database.ts';
import { enumSetting, intSetting, type SettingsRegistry } from '../lib/settings-registry.ts';
import { DatabaseLogSink, FileLogSink, LogSinks } from './log-sinks.ts';

export const SETTING_MAX_CONCURRENT = 'task_max_concurrent';
export const SETTING_LOG_BACKEND = 'task_log_storage_backend';
export const SETTING_LOG_RETENTION = 'task_log_retention_days';

/** The built-in log backends: `database` (the task_logs table) and `file` (under server.file_upload_path). */
export function createLogSinks(db: Database, fileUploadPath: string): LogSinks {
  const sinks = new LogSinks();
  sinks.register(new DatabaseLogSink(db));
  sinks.register(new FileLogSink(fileUploadPath));
  return sinks;
}

/** The engine's runtime settings (docs/decisions.md "Settings and audit"); the backend is validated against the registered sinks. */
export function declareEngineSettings(registry: SettingsRegistry, sinks: LogSinks): void {
  registry.declare({
    key: SETTING_MAX_CONCURRENT,
    description: 'Tasks each node runs at once',
    default: '10',
    schema: intSetting(1, 1000),
  });
  registry.declare({
    key: SETTING_LOG_BACKEND,
    description: 'Where task execution logs are stored',
    default: 'database',
    schema: enumSetting(() => sinks.ids()),
  });
  registry.declare({
    key: SETTING_LOG_RETENTION,
    description: 'Days task logs, finished tasks and their artifacts are kept',
    default: '30',
    schema: intSetting(1, 36_500),
  });
}
