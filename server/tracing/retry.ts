import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/** The `tracing.*.retry` block (README), durations in milliseconds. */
export interface RetryPolicy {
  enabled: boolean;
  initial_interval: number;
  max_interval: number;
  /** 0: no time limit (the OpenTelemetry Collector's meaning); the batch still counts against MAX_WAITING. */
  max_elapsed_time: number;
}

/** A refusal that sending again cannot change (HTTP 400, gRPC INVALID_ARGUMENT): the batch is not retried. */
export class PermanentExportError extends Error {}

/** At most this many failed batches wait for a retry; a batch failing beyond that is dropped. */
export const MAX_WAITING = 4;
const MULTIPLIER = 1.5;
const JITTER = 0.2;

interface Waiting {
  spans: ReadableSpan[];
  /** When the first attempt started. */
  since: number;
  interval: number;
  timer?: NodeJS.Timeout;
}

const SUCCESS: ExportResult = { code: ExportResultCode.SUCCESS };

/**
 * Sends each batch once and, when that fails and the policy allows, again with exponential backoff (×1.5 from
 * `initial_interval`, capped at `max_interval`, up to 20% added) while the next attempt would still start within
 * `max_elapsed_time` of the first. The batch processor is answered after the first attempt (a batch taken for retry
 * counts as accepted), so a receiver that is down never holds up the spans behind it; held batches are bounded by
 * MAX_WAITING. Every failure is handed to `report`, which rate-limits.
 */
export class RetryingExporter implements SpanExporter {
  private readonly waiting = new Set<Waiting>();
  private readonly sending = new Set<Promise<unknown>>();
  private stopping = false;

  constructor(
    private readonly inner: SpanExporter,
    private readonly policy: RetryPolicy,
    private readonly report: (error: Error) => void,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    const since = performance.now();
    void this.attempt(spans).then((error) => {
      if (!error) return done(SUCCESS);
      this.report(error);
      if (!this.policy.enabled || this.stopping || error instanceof PermanentExportError)
        return done({ code: ExportResultCode.FAILED, error });
      if (this.waiting.size >= MAX_WAITING) {
        return done({
          code: ExportResultCode.FAILED,
          error: new Error(
            `${MAX_WAITING} failed batches already wait for a retry; a batch of ${spans.length} spans is dropped`,
          ),
        });
      }
      const batch: Waiting = { spans, since, interval: this.policy.initial_interval };
      this.waiting.add(batch);
      this.schedule(batch, error);
      done(SUCCESS);
    });
  }

  private attempt(spans: ReadableSpan[]): Promise<Error | undefined> {
    const sent = new Promise<Error | undefined>((resolve) => {
      this.inner.export(spans, (r) =>
        resolve(r.code === ExportResultCode.SUCCESS ? undefined : (r.error ?? new Error('trace export failed'))),
      );
    });
    this.sending.add(sent);
    void sent.then(() => this.sending.delete(sent));
    return sent;
  }

  private schedule(batch: Waiting, error: Error): void {
    const delay = Math.min(batch.interval * (1 + Math.random() * JITTER), this.policy.max_interval);
    const limit = this.policy.max_elapsed_time;
    if (limit > 0 && performance.now() + delay - batch.since > limit) return this.drop(batch, error);
    batch.timer = setTimeout(() => void this.retry(batch), delay).unref();
  }

  private async retry(batch: Waiting): Promise<void> {
    batch.timer = undefined;
    const error = await this.attempt(batch.spans);
    if (!error) {
      this.waiting.delete(batch);
      return;
    }
    this.report(error);
    if (this.stopping || error instanceof PermanentExportError) return this.drop(batch, error);
    batch.interval = Math.min(batch.interval * MULTIPLIER, this.policy.max_interval);
    this.schedule(batch, error);
  }

  private drop(batch: Waiting, error: Error): void {
    this.waiting.delete(batch);
    this.report(
      new Error(
        `a batch of ${batch.spans.length} spans is dropped after ${Math.round(performance.now() - batch.since)} ms of retries: ${error.message}`,
      ),
    );
  }

  async forceFlush(): Promise<void> {
    await Promise.all(this.sending);
    await this.inner.forceFlush?.();
  }

  /** Batches waiting for their next attempt get it now, once; then the exporter closes. */
  async shutdown(): Promise<void> {
    this.stopping = true;
    const due = [...this.waiting].filter((b) => b.timer);
    for (const b of due) clearTimeout(b.timer);
    await Promise.all(due.map((b) => this.retry(b)));
    await this.forceFlush();
    await this.inner.shutdown();
  }
}
