/** Every table name, with `database.table_prefix` applied. */
export function tableNames(prefix: string) {
  const name = (base: string) => `${prefix}${base}`;
  return {
    users: name('users'),
    roles: name('roles'),
    rolePermissions: name('role_permissions'),
    userRoles: name('user_roles'),
    sessions: name('sessions'),
    settings: name('settings'),
    secrets: name('secrets'),
    auditLogs: name('audit_logs'),
    changes: name('changes'),
    migrations: name('migrations'),
  };
}

export type TableNames = ReturnType<typeof tableNames>;
