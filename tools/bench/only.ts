// BENCH_ONLY, shared by the benchmarks that measure several parts: a comma-separated list of the parts to run.

/** Whether a part is to run: every part without BENCH_ONLY; a name the benchmark does not know is an error. */
export function benchOnly(parts: readonly string[]): (part: string) => boolean {
  const only = process.env.BENCH_ONLY?.split(',');
  const unknown = only?.filter((part) => !parts.includes(part));
  if (unknown?.length) throw new Error(`BENCH_ONLY: no part ${unknown.join(', ')} (there are ${parts.join(', ')})`);
  return (part) => !only || only.includes(part);
}
