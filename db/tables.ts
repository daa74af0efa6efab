/** Every table name, with `database.table_prefix` applied. */
export function tableNames(prefix: string) {
  const name = (base: string) => `${prefix}${base}`;
  return {
    users: name('users'),
    roles: name('roles'),
    rolePermissions: name('role_permissions'),
    userRoles: name('user_roles'),
    sessions: name('sessions'),
    userTokens: name('user_tokens'),
    settings: name('settings'),
    secrets: name('secrets'),
    auditLogs: name('audit_logs'),
    /** The audit chain's head: the last seq and its hash, the row every append locks (docs/audit-chain.md). */
    auditChain: name('audit_chain'),
    auditCheckpoints: name('audit_checkpoints'),
    changes: name('changes'),
    tasks: name('tasks'),
    /** How many tasks are not deleted, where the database keeps it (Dialect.keepLiveRowCount). */
    taskCount: name('task_count'),
    taskLogs: name('task_logs'),
    files: name('files'),
    taskSchedules: name('task_schedules'),
    organizations: name('organizations'),
    orgMembers: name('organization_members'),
    orgMemberRoles: name('organization_member_roles'),
    oauthIdentities: name('oauth_identities'),
    oauthStates: name('oauth_states'),
    idempotencyKeys: name('idempotency_keys'),
    taskEvents: name('task_events'),
    eventTickets: name('event_tickets'),
    migrations: name('migrations'),
  };
}

export type TableNames = ReturnType<typeof tableNames>;
