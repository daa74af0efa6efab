// A task engine node in its own process, for the crash test: it claims `crash_victim` tasks, holds them
// (its runner never finishes by itself) and prints "ready <workerId>"; the test kills it with SIGKILL.
import { startEngineNode } from './engine-node.ts';

const node = await startEngineNode(JSON.parse(process.env.ENGINE_CHILD_DATABASE!), {
  config: { leaseTtlMs: Number(process.env.ENGINE_CHILD_LEASE_MS ?? 1500), leaseRenewIntervalMs: 300 },
});
node.engine.register('crash_victim', (ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', resolve)));
process.stdout.write(`ready ${node.engine.workerId}\n`);
