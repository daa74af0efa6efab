import { boolSetting, intSetting, type SettingsRegistry } from '../../lib/settings-registry.ts';

/** The identity and retention settings of the foundation (docs/decisions.md "Settings and audit"). */
export function declareCoreSettings(registry: SettingsRegistry): void {
  registry.declare({
    key: 'session_idle_timeout_minutes',
    description: 'Idle session timeout in minutes',
    default: '1440',
    schema: intSetting(1, 525_600),
  });
  registry.declare({
    key: 'password_min_length',
    description: 'Minimum password length',
    default: '8',
    schema: intSetting(6, 128),
  });
  registry.declare({
    key: 'login_failure_attempts',
    description: 'Consecutive failed logins that lock an account',
    default: '5',
    schema: intSetting(1, 100),
  });
  registry.declare({
    key: 'login_failure_lockout_minutes',
    description: 'How long a locked account stays locked',
    default: '10',
    schema: intSetting(1, 525_600),
  });
  registry.declare({
    key: 'welcome_email_enabled',
    description: 'Send a welcome email when a user is created',
    default: 'false',
    schema: boolSetting(),
  });
  registry.declare({
    key: 'audit_log_retention_days',
    description: 'Days audit records are kept',
    default: '365',
    schema: intSetting(1, 36_500),
  });
}
