import type { EngineCore } from './core.ts';
import type { RunWrites } from './run.ts';

/**
 * A runner's log lines make no change of their own, but a page following a task reads its log again on each of the
 * task's changes: stored lines are signalled as the task's state as it is, at most once a second, so the log of a
 * runner that never reports progress follows too (the events log coalesces such changes as it does progress).
 */
const LOG_SIGNAL_EVERY_MS = 1000;

/** A running task's own writes, fenced on its claim; progress is signalled once stored. */
export function runWrites(core: EngineCore): RunWrites {
  return {
    async progress(run) {
      const progress = run.progress;
      if (await core.store.setProgress(run.row.id, run.claimId, progress)) core.emit(run.row, { progress });
    },
    logged(run) {
      const now = Date.now();
      if (run.finishing || now - run.lastLogSignal < LOG_SIGNAL_EVERY_MS) return;
      run.lastLogSignal = now;
      core.emit(run.row, { progress: run.progress });
    },
    artifact: (run, fileKey, fileName) => core.store.setArtifact(run.row.id, run.claimId, fileKey, fileName),
    async holds(run) {
      const [now] = await core.store.held([run.row.id]);
      return now?.status === 'running' && now.claim_id === run.claimId;
    },
  };
}
