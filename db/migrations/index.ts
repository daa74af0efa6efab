import type { Migration } from './migration.ts';
import { identity } from './001_identity.ts';
import { tasks } from './002_tasks.ts';
import { userTokens } from './003_user_tokens.ts';
import { organizations } from './004_organizations.ts';
import { oauth } from './005_oauth.ts';
import { taskVersions } from './006_task_versions.ts';
import { idempotencyKeys } from './007_idempotency_keys.ts';
import { taskEvents } from './008_task_events.ts';
import { taskListIndexes } from './009_task_list_indexes.ts';
import { taskIndexEntries } from './010_task_index_entries.ts';
import { taskBacklog } from './011_task_backlog.ts';
import { taskClaimEntries } from './012_task_claim_entries.ts';
import { auditChain } from './013_audit_chain.ts';

/** Every migration in order. Add new ones at the end; never edit one that has shipped. */
export const migrations: Migration[] = [
  identity,
  tasks,
  userTokens,
  organizations,
  oauth,
  taskVersions,
  idempotencyKeys,
  taskEvents,
  taskListIndexes,
  taskIndexEntries,
  taskBacklog,
  taskClaimEntries,
  auditChain,
];
