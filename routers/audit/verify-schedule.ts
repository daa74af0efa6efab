import type { Logger } from 'pino';
import type { TaskEngine } from '../../engine/engine.ts';
import type { Scheduler } from '../../engine/scheduler.ts';
import type { AuditChain } from './chain.ts';
import type { AuditWriter } from './writer.ts';

export const AUDIT_VERIFY_TYPE = 'audit_verify';

/**
 * The built-in daily verification of the audit chain (docs/engine.md's built-in schedules). A broken chain is
 * logged as an error and audited, and fails the task, so it shows in the task list too.
 */
export function registerAuditVerify(
  engine: TaskEngine,
  scheduler: Scheduler,
  chain: AuditChain,
  audit: AuditWriter,
  logger: Logger,
): void {
  engine.register(AUDIT_VERIFY_TYPE, async () => {
    const result = await chain.verify();
    if (result.broken) {
      logger.error({ audit_chain: result }, 'the audit chain is broken');
      await audit.write({
        action: 'verify',
        resource_type: 'audit_log',
        resource_id: String(result.broken.seq),
        status: 'failure',
        actor: { id: null, username: 'system' },
        details: { ...result.broken, verified_seq: result.verified_seq },
      });
      throw new Error(
        `audit chain broken at seq ${result.broken.seq}: ${result.broken.kind} (${result.broken.reason})`,
      );
    }
    return result;
  });
  scheduler.define({
    id: 'audit-log-verify',
    name: 'Audit log verification',
    spec: '30 0 * * *',
    taskType: AUDIT_VERIFY_TYPE,
    maxRetries: 0,
  });
}
