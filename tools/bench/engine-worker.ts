// A worker process of bench:engine's several-process row: runs no-op tasks on the database in BENCH_DB
// (DbOptions as JSON) and reports the ids it started to its parent, in batches every 10 ms.
import { openConsoleNode } from './console-node.ts';

const node = await openConsoleNode(JSON.parse(process.env.BENCH_DB!));
let started: string[] = [];
setInterval(() => {
  if (started.length) process.send!(started);
  started = [];
}, 10);
node.engine.register('noop', async (ctx) => void started.push(ctx.task.id));
await node.engine.start();
process.send!('ready');
process.on('message', async (message) => {
  if (message !== 'stop') return;
  await node.close(false);
  process.exit(0);
});
