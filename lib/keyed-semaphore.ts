/**
 * In-process admission by key: at most `running` callers of one key run at once, at most `waiting` more wait
 * their turn (in arrival order), and a caller beyond those is refused at once. Different keys run freely.
 */
export class KeyedSemaphore {
  private readonly keys = new Map<string, { running: number; queue: (() => void)[] }>();

  constructor(
    private readonly running: number,
    private readonly waiting: number,
  ) {}

  /** Runs `fn` in its key's turn; `refuse()` is thrown, without running it, when the key is full. */
  async run<T>(key: string, fn: () => Promise<T>, refuse: () => Error): Promise<T> {
    let found = this.keys.get(key);
    if (!found) this.keys.set(key, (found = { running: 0, queue: [] }));
    const state = found;
    if (state.running >= this.running) {
      if (state.queue.length >= this.waiting) throw refuse();
      await new Promise<void>((resolve) => state.queue.push(resolve));
    } else state.running++;
    try {
      return await fn();
    } finally {
      // The slot passes straight to the next waiter; the last one out leaves no entry behind.
      const next = state.queue.shift();
      if (next) next();
      else if (--state.running === 0) this.keys.delete(key);
    }
  }
}
