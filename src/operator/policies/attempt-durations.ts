/**
 * How long a pool's attempts take, measured as they finish, for the policy's status.durations (and `nuo
 * whatif run`, which predicts with them). Pure, with a small tracker of the phases each node entered.
 *
 * Rules, each with its reason:
 * - A phase's start is the time the operator wrote on the node when it entered it (`nuo.dev/state-since`),
 *   not when this process saw it: a late pass does not lengthen a measure.
 * - An attempt is measured when it completes (its node leaves AfterReboot for Idle); an attempt that
 *   failed or was aborted is not: its times measure the failure, not the pool.
 * - drain: Draining to RebootGranted; reboot: RebootGranted (or Rebooting, when the grant went unseen)
 *   to AfterReboot, the new boot ID seen; return: AfterReboot to Ready, 0 when Ready already. A part
 *   whose start went unseen (a pass saw the node only after it) is left out, not guessed.
 * - The status keeps the latest MAX_DURATION_SAMPLES of each part and their medians: bounded, and
 *   following the pool as it changes.
 */
import { Phase } from '../../api/phases.ts';
import { type DurationsStatus, MAX_DURATION_SAMPLES } from '../../api/update-policy.ts';
import type { NodeView } from '../decide/node-view.ts';

/** When the node entered each phase of its current attempt, epoch ms. */
export type AttemptMarks = Partial<Record<Phase, number>>;

/** One finished attempt's parts, in seconds; a part whose start went unseen is absent. */
export interface AttemptSample {
  drainSeconds?: number;
  rebootSeconds?: number;
  returnSeconds?: number;
}

const MEASURED: ReadonlySet<Phase> = new Set([
  Phase.beforeReboot,
  Phase.draining,
  Phase.rebootGranted,
  Phase.rebooting,
  Phase.afterReboot,
]);

/** The marks after seeing `n`: its phase's start added; none when it is outside an attempt or failed. */
export function observeAttempt(marks: AttemptMarks | undefined, n: NodeView): AttemptMarks | undefined {
  const state = n.state;
  if (!state || !MEASURED.has(state) || !n.stateSince) return undefined;
  const since = n.stateSince.getTime();
  // A BeforeReboot later than the marks' is a new attempt (the last one ended unseen).
  const fresh = state === Phase.beforeReboot && (marks?.BeforeReboot ?? since) !== since;
  const base = fresh ? {} : (marks ?? {});
  return base[state] === undefined ? { ...base, [state]: since } : base;
}

const secs = (ms: number) => Math.round(ms / 100) / 10;
const span = (from: number | undefined, to: number | undefined) =>
  from !== undefined && to !== undefined && to >= from ? secs(to - from) : undefined;

/** The sample of an attempt completing now, from its marks and the node as the pass saw it. */
export function attemptSample(marks: AttemptMarks, n: NodeView): AttemptSample {
  const back = marks.AfterReboot;
  const drain = span(marks.Draining, marks.RebootGranted);
  const reboot = span(marks.RebootGranted ?? marks.Rebooting, back);
  const ready = n.readySince?.getTime();
  const ret = back === undefined ? undefined : ready !== undefined && ready > back ? secs(ready - back) : 0;
  return {
    ...(drain !== undefined ? { drainSeconds: drain } : {}),
    ...(reboot !== undefined ? { rebootSeconds: reboot } : {}),
    ...(ret !== undefined ? { returnSeconds: ret } : {}),
  };
}

/** The middle value (the mean of the two middle ones for an even count); none of nothing. */
export function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const m =
    sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  return Math.round(m * 10) / 10;
}

/** status.durations with `samples` added: each part's latest MAX_DURATION_SAMPLES and their medians. */
export function addSamples(
  previous: DurationsStatus | undefined,
  samples: readonly AttemptSample[],
): DurationsStatus | undefined {
  if (samples.length === 0) return previous;
  const keep = (old: readonly number[] | undefined, part: keyof AttemptSample) =>
    [...(old ?? []), ...samples.flatMap((s) => (s[part] === undefined ? [] : [s[part]]))].slice(
      -MAX_DURATION_SAMPLES,
    );
  const drainSeconds = keep(previous?.drainSeconds, 'drainSeconds');
  const rebootSeconds = keep(previous?.rebootSeconds, 'rebootSeconds');
  const returnSeconds = keep(previous?.returnSeconds, 'returnSeconds');
  const p50 = (key: string, values: number[]) => {
    const m = median(values);
    return m === undefined ? {} : { [key]: m };
  };
  return {
    samples: (previous?.samples ?? 0) + samples.length,
    drainSeconds,
    rebootSeconds,
    returnSeconds,
    ...p50('drainP50Seconds', drainSeconds),
    ...p50('rebootP50Seconds', rebootSeconds),
    ...p50('returnP50Seconds', returnSeconds),
  };
}

/** Each node's marks of its current attempt, as passes see the nodes. */
export class AttemptClock {
  readonly #marks = new Map<string, AttemptMarks>();

  /** Sees a pass's nodes; `completing` are those whose attempts complete in it: their samples. */
  observe(nodes: readonly NodeView[], completing: ReadonlySet<string>): Map<string, AttemptSample> {
    const samples = new Map<string, AttemptSample>();
    const seen = new Set<string>();
    for (const n of nodes) {
      seen.add(n.name);
      const marks = observeAttempt(this.#marks.get(n.name), n);
      if (marks && completing.has(n.name)) {
        // Only the return seen: a completion decided again after its write failed, already counted.
        const sample = attemptSample(marks, n);
        if (sample.drainSeconds !== undefined || sample.rebootSeconds !== undefined)
          samples.set(n.name, sample);
        this.#marks.delete(n.name);
      } else if (marks) this.#marks.set(n.name, marks);
      else this.#marks.delete(n.name);
    }
    for (const name of this.#marks.keys()) if (!seen.has(name)) this.#marks.delete(name);
    return samples;
  }
}
