import { appendFile } from 'node:fs/promises';
import type { Database } from '../../db/database.ts';
import { chainedRecords } from '../../db/repositories/audit-chain.ts';
import {
  allCheckpoints,
  listCheckpoints,
  removeChainPrefix,
  writeCheckpoint,
} from '../../db/repositories/audit-checkpoints.ts';
import type { Checkpoint, CheckpointSigner } from '../../lib/audit-checkpoint.ts';
import { verifyChain, type Verification } from '../../lib/audit-verify.ts';
import { offsetOf, page, type Pagination } from '../common/schemas.ts';

/** Verifying the chain and reading its checkpoints: administrators, or a role given it. */
export const AUDIT_VERIFY_PERMISSION = 'audit_log:verify';

export interface ChainMetrics {
  /** The last seq the chain was verified intact up to, and whether the last verification found it intact. */
  verified(result: Verification): void;
}

export interface AuditChainOptions {
  /** Where each checkpoint is also appended as a JSON line (`audit.checkpoint_path`); empty: nowhere. */
  checkpointPath: string;
  intervalMs: number;
  metrics?: ChainMetrics;
  onError(error: unknown, what: string): void;
}

/**
 * The audit log's proof (docs/audit-chain.md): signed checkpoints of the chain (each interval while records
 * were added, and at shutdown), the retention cleanup that leaves one behind, and verification.
 */
export class AuditChain {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<Verification> | undefined;

  constructor(
    private readonly db: Database,
    private readonly signer: CheckpointSigner,
    private readonly options: AuditChainOptions,
  ) {}

  publicKey() {
    return { algorithm: 'Ed25519' as const, public_key: this.signer.publicKeyPem() };
  }

  start(): void {
    if (this.options.intervalMs <= 0) return;
    this.timer = setInterval(() => {
      this.checkpoint().catch((error: unknown) => this.options.onError(error, 'audit checkpoint'));
    }, this.options.intervalMs);
    this.timer.unref();
  }

  /** Stops the interval and signs what was added since the last checkpoint. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.checkpoint().catch((error: unknown) => this.options.onError(error, 'audit checkpoint'));
  }

  /** Signs a checkpoint when records were added since the last one; answers it, or undefined. */
  async checkpoint(): Promise<Checkpoint | undefined> {
    const c = await writeCheckpoint(this.db, (body) => this.signer.sign(body));
    if (c) await this.keep(c);
    return c;
  }

  /** Removes the records made before `before` (a prefix of the chain), leaving a checkpoint that says so. */
  async removeBefore(before: Date): Promise<number> {
    const { removed, checkpoint } = await removeChainPrefix(this.db, before, (body) => this.signer.sign(body));
    if (checkpoint) await this.keep(checkpoint);
    return removed;
  }

  /** Walks the whole chain against the checkpoints (those stored, or `checkpoints` when given). */
  verify(checkpoints?: Checkpoint[]): Promise<Verification> {
    if (checkpoints) return this.walk(checkpoints);
    // Callers asking while a walk runs share it: the answer is as fresh, and the database reads it once.
    this.running ??= (async () => {
      try {
        return await this.walk(await allCheckpoints(this.db));
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  private async walk(checkpoints: Checkpoint[]): Promise<Verification> {
    const records = chainedRecords(this.db, {}, Number.MAX_SAFE_INTEGER, { detailsText: true });
    const result = await verifyChain(records, checkpoints, this.signer.publicKey);
    this.options.metrics?.verified(result);
    return result;
  }

  async checkpoints(input: Pagination) {
    const { rows, total } = await listCheckpoints(this.db, offsetOf(input), input.page_size);
    return page(rows, total, input);
  }

  /** Appends the checkpoint to the file outside the database; it holds no secret, so others may read it. */
  private async keep(c: Checkpoint): Promise<void> {
    const path = this.options.checkpointPath;
    if (!path) return;
    // The mode applies when the file is created; the umask may only make it stricter.
    await appendFile(path, `${JSON.stringify(c)}\n`, { mode: 0o644 });
  }
}
