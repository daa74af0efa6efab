/** How long a change waits for others to share its write. */
const FLUSH_MS = 50;
const MAX_BACKOFF_MS = 5000;

/**
 * When a buffer of changes is written (the versioned task store's, task-versions.ts): `FLUSH_MS` after a
 * change, one write at a time (a write asked for while one runs joins it), again `FLUSH_MS` after a write that
 * left newer changes, and after a failure with a backoff that doubles up to 5 s. It counts changes, so a settle
 * waits for those made before it only: under steady load there are always newer ones. What the buffer holds and
 * how it is written is the store's: `write` takes every change made when it began.
 */
export class WriteLoop {
  private running: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private changes = 0;
  /** Every change up to this count is written. */
  private written = 0;
  private failed = 0;
  /** Grows with every reset: a write begun before one changes nothing of the loop when it ends. */
  private epoch = 0;

  constructor(
    private readonly write: () => Promise<void>,
    private readonly onFailure: (error: unknown) => void,
  ) {}

  /** Failed writes in a row: none once a write succeeds. */
  get failures(): number {
    return this.failed;
  }

  /** Counts one change, to be written `FLUSH_MS` later, or by the write under way or the retry a failure armed. */
  changed(): void {
    this.changes++;
    this.later(FLUSH_MS);
  }

  /** Waits until every change made before this call is written, writing as often as that takes. */
  async settle(): Promise<void> {
    const target = this.changes;
    while (this.written < target) await this.run();
  }

  /** The write under way, if any, ended either way. */
  async idle(): Promise<void> {
    await this.running?.catch(() => {});
  }

  /** Forgets every change and failure, as after a restart: the store dropped what it held. */
  reset(): void {
    this.epoch++;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.written = this.changes;
    this.failed = 0;
  }

  /** A write `ms` from now, unless one is armed already. */
  private later(ms: number): void {
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      // A failure has its retry armed by run().
      this.run().catch(() => {});
    }, ms).unref();
  }

  /** One write, or the one under way joined; whoever started it, changes made meanwhile get a timer. */
  private run(): Promise<void> {
    if (this.running) return this.running;
    const upTo = this.changes;
    const epoch = this.epoch;
    this.running = this.write()
      .then(
        () => {
          if (epoch !== this.epoch) return;
          this.written = upTo;
          this.failed = 0;
          if (this.changes > upTo) this.later(FLUSH_MS);
        },
        (error: unknown) => {
          if (epoch !== this.epoch) throw error;
          this.failed++;
          this.onFailure(error);
          clearTimeout(this.timer);
          this.timer = undefined;
          this.later(Math.min(MAX_BACKOFF_MS, FLUSH_MS * 2 ** this.failed));
          throw error;
        },
      )
      .finally(() => (this.running = undefined));
    return this.running;
  }
}
