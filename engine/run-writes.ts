import type { EngineCore } from './core.ts';
import type { RunWrites } from './run.ts';

/** A running task's own writes, fenced on its claim; progress is signalled once stored. */
export function runWrites(core: EngineCore): RunWrites {
  return {
    async progress(run) {
      const progress = run.progress;
      if (await core.store.setProgress(run.row.id, run.claimId, progress)) core.emit(run.row, { progress });
    },
    artifact: (run, fileKey, fileName) => core.store.setArtifact(run.row.id, run.claimId, fileKey, fileName),
    async holds(run) {
      const [now] = await core.store.held([run.row.id]);
      return now?.status === 'running' && now.claim_id === run.claimId;
    },
  };
}
