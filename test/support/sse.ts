/** A server-sent event as a client sees it. */
export interface SseEvent {
  id?: string;
  data: any;
}

/** A server-sent events response read frame by frame, as a browser's EventSource would. */
export interface SseStream {
  status: number;
  headers: Headers;
  /** The JSON body when the server answered with an error envelope instead of a stream. */
  body?: any;
  events: SseEvent[];
  comments: string[];
  retry?: number;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  /** Waits for an event `match` accepts (among those received so far or later); fails after `ms`. */
  next(match: (e: SseEvent) => boolean, ms?: number, what?: string): Promise<SseEvent>;
  close(): void;
}

/** Opens `url` and parses its event stream in the background. */
export async function openSse(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  const notify = () => {
    for (const w of waiters) w();
  };
  const stream: SseStream = {
    status: res.status,
    headers: res.headers,
    events,
    comments,
    ended: Promise.resolve(),
    async next(match, ms = 5000, what = 'event') {
      const deadline = Date.now() + ms;
      let seen = 0;
      for (;;) {
        for (; seen < events.length; seen++) if (match(events[seen]!)) return events[seen]!;
        if (Date.now() > deadline) throw new Error(`${what}: not received within ${ms} ms`);
        await new Promise<void>((resolve) => {
          const done = () => {
            waiters.delete(done);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(done, Math.max(1, deadline - Date.now()));
          waiters.add(done);
        });
      }
    },
    close: () => abort.abort(),
  };
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
    stream.body = await res.json().catch(() => undefined);
    return stream;
  }
  stream.ended = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let id: string | undefined;
          let data: string | undefined;
          for (const line of frame.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('data: ')) data = (data === undefined ? '' : `${data}\n`) + line.slice(6);
            else if (line.startsWith('retry: ')) stream.retry = Number(line.slice(7));
          }
          if (data !== undefined) events.push({ id, data: JSON.parse(data) });
          notify();
        }
      }
    } catch {
      // Aborted by the test.
    }
    notify();
  })();
  return stream;
}
