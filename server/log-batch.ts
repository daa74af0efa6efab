// Release log lines are gathered and written together: with the access log at `info` a line is written per request,
// and a write per line (two sinks: stdout and the file) cost more CPU than the request's own work.
import { openSync } from 'node:fs';
import pino from 'pino';

/** What a batch gathers before it writes, and how long a line waits at most. */
const BATCH_BYTES = 8 * 1024;
const FLUSH_EVERY_MS = 200;

type Destination = ReturnType<typeof pino.destination>;

/**
 * Lines kept in an array and written as one string. sonic-boom's own buffering appends each line to one growing
 * string, which cost about 5 KB of allocation a line in copies (docs/performance.md "Logging").
 */
class LineBatch {
  private lines: string[] = [];
  private size = 0;

  constructor(private readonly out: Destination) {}

  write(line: string): void {
    this.lines.push(line);
    this.size += line.length;
    if (this.size >= BATCH_BYTES) this.flush();
  }

  flush(): void {
    if (!this.lines.length) return;
    const text = this.lines.join('');
    this.lines = [];
    this.size = 0;
    this.out.write(text);
  }
}

const batches = new Set<LineBatch>();
let timer: NodeJS.Timeout | undefined;

/**
 * A batch writing to a file (opened here, synchronously, so a process ending at once keeps its lines) or to fd 1.
 * The writes are synchronous, as pino's own stdout is (sonic-boom retries partial writes and a full pipe); every
 * batch is written on a timer and when the process exits.
 */
export function lineBatch(dest: string | number): { write(line: string): void } {
  const fd = typeof dest === 'number' ? dest : openSync(dest, 'a');
  const batch = new LineBatch(pino.destination({ dest: fd, sync: true }));
  if (!batches.size) process.once('exit', flushAll);
  batches.add(batch);
  timer ??= setInterval(flushAll, FLUSH_EVERY_MS).unref();
  return batch;
}

function flushAll(): void {
  for (const batch of batches) batch.flush();
}
