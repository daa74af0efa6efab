// CPU time of processes on this host, read from /proc, for bench:engine's CPU-per-task columns: the benchmark's
// own process and its workers, and a database server's processes (PostgreSQL backends, mariadbd).
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** User + system CPU seconds of process `pid`; undefined once it is gone. */
export function cpuSecondsOf(pid: number | string): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which may itself hold spaces and parentheses: utime and stime are 12th and 13th.
    const fields = stat
      .slice(stat.lastIndexOf(')') + 1)
      .trim()
      .split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** CPU seconds so far of each process whose executable is named `name` (`/proc/<pid>/comm`), by pid. */
export function cpuByProcess(name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let command: string;
    try {
      command = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    if (command !== name) continue;
    const seconds = cpuSecondsOf(pid);
    if (seconds !== undefined) out.set(pid, seconds);
  }
  return out;
}

/**
 * CPU seconds the processes named `name` spent since `before` was taken: a process started since counts from
 * zero (a connection the pool opened meanwhile); one that ended meanwhile is missed.
 */
export function cpuSince(name: string, before: Map<string, number>): number {
  let seconds = 0;
  for (const [pid, now] of cpuByProcess(name)) seconds += now - (before.get(pid) ?? 0);
  return seconds;
}
