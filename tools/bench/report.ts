// The benchmarks' servers (serve-console.ts, serve-bare.ts) report where they listen over IPC once they serve, so
// their stdout carries only the console's log, as `npm start` writes it; the benchmark drains it as a log collector
// reading a service's output would.
import type { ChildProcess } from 'node:child_process';

export interface Report {
  port: number;
  /** The administrator's token (serve-console.ts). */
  token?: string;
}

/** The first message of a server started with an IPC channel: where it listens. */
export function reported(proc: ChildProcess, what: string): Promise<Report> {
  proc.stdout?.resume();
  return new Promise((resolve, reject) => {
    proc.once('message', (m) => resolve(m as Report));
    proc.once('exit', (code) => reject(new Error(`${what} exited with ${code}`)));
  });
}
