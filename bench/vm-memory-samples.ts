/** The VM memory benchmark's samples (bench/vm-memory.ts) and the rows they make, as pure functions. */

export interface Sample {
  /** When, by the VM's clock (ms since the epoch). */
  ms: number;
  container: string;
  /** The container cgroup's memory.current − inactive_file: the working set the kubelet reports (bytes). */
  workingSetBytes: number;
  /** memory.peak: the cgroup's high-water mark since it was made (bytes). */
  peakBytes: number;
  /** The summed VmRSS of the cgroup's processes (bytes). */
  rssBytes: number;
}

/** The sampler's lines (`ms name current inactive_file peak rssKiB`); a line it cut short is dropped. */
export function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    // The container's name may hold spaces: the five numbers are the ends of the line.
    const m = line.match(/^(\d+) (.+) (\d+) (\d+) (\d+) (\d+)$/);
    if (!m) continue;
    const [, ms, container, current, inactive, peak, rssKiB] = m;
    samples.push({
      ms: Number(ms),
      container: container as string,
      workingSetBytes: Math.max(0, Number(current) - Number(inactive)),
      peakBytes: Number(peak),
      rssBytes: Number(rssKiB) * 1024,
    });
  }
  return samples;
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/** One table row per container of the phase, in the order each first appears. */
export function memoryRows(phase: string, samples: Sample[]): string[] {
  const containers = [...new Set(samples.map((s) => s.container))];
  return containers.map((c) => {
    const of = samples.filter((s) => s.container === c);
    const ws = of.map((s) => s.workingSetBytes);
    const rss = of.map((s) => s.rssBytes);
    const peak = Math.max(...of.map((s) => s.peakBytes));
    return `| ${phase} (${of.length} samples) | ${c} | ${mib(median(ws))} | ${mib(Math.max(...ws))} | ${mib(peak)} | ${mib(median(rss))} | ${mib(Math.max(...rss))} |`;
  });
}

/**
 * The goal's verdict: `ours` at most `theirs` by the median working set of every phase where both were
 * sampled, or the phases where it is not, with both figures.
 */
export function goalVerdict(
  phases: readonly { name: string; samples: Sample[] }[],
  ours: string,
  theirs: string,
): string {
  const missed = phases.flatMap((p) => {
    const ws = (c: string) => p.samples.filter((s) => s.container === c).map((s) => s.workingSetBytes);
    const [a, b] = [ws(ours), ws(theirs)];
    if (a.length === 0 || b.length === 0) return [];
    return median(a) <= median(b) ? [] : [`${p.name}: ${mib(median(a))} against ${mib(median(b))}`];
  });
  return missed.length === 0
    ? `Goal met: ${ours}'s median working set is at most ${theirs}'s in every phase.`
    : `Goal missed (${ours}'s median working set above ${theirs}'s): ${missed.join('; ')}.`;
}
