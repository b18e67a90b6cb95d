/**
 * The rules the independent checker (checker.ts) holds an attempt's start and end to about the node
 * itself, from what it saw of the node alone (pure):
 * - an attempt starts only through the node's own gates: not while it is labelled skipped, nor while an
 *   autoscaler's deletion taint has been on it, nor once its need survived the policy's
 *   maxIneffectiveReboots, nor within the retry backoff of its last failure or ineffective reboot. Times
 *   are the API server's, of the writes themselves (writtenAt): one clock, whatever the watch's delays
 *   (an operator counts a backoff from its own sight of the failure, never earlier than its write);
 * - an attempt whose host rebooted ends only once the kubelet has posted the new boot ID (the health
 *   gate is on the new boot), never while the node still shows the boot it rebooted out of;
 * - a refresh again after a reboot that left the node's boot time where it was counts that reboot as
 *   ineffective (else a boot time that does not advance refreshes the node for ever).
 */
import type { V1Node } from '@kubernetes/client-node';
import { Annotations, AutoscalerTaints, Labels } from '../api/keys.ts';

/** The node's gates as its policy sets them (spec.reboot). */
export interface NodeGateSettings {
  retryBackoffMs: number;
  retryBackoffMaxMs: number;
  maxIneffectiveReboots: number;
}

/**
 * When the API server made the write that produced this version of `n` (ms): the latest time its managed
 * fields record, which that write set (second precision). Undefined when none is recorded.
 */
export function writtenAt(n: V1Node): number | undefined {
  const times = (n.metadata?.managedFields ?? [])
    .map((f) => (f.time === undefined ? Number.NaN : new Date(f.time as unknown as string).getTime()))
    .filter((t) => !Number.isNaN(t));
  return times.length > 0 ? Math.max(...times) : undefined;
}

/** What the checker saw of a node that bears on its next attempt (ms of the API server's writes). */
export interface NodeGateMemory {
  /** When its consecutive failures (`nuo.dev/failures`) were seen rising to `count`. */
  failed?: { count: number; at: number };
  /** When its ineffective reboots were seen rising to `count`. */
  ineffective?: { count: number; at: number };
  /** Since when an autoscaler's deletion taint has been seen on it. */
  removedSince?: number;
}

const count = (n: V1Node, key: string) => {
  const raw = n.metadata?.annotations?.[key];
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : 0;
};

/** The backoff after `k` failures (or ineffective reboots) in a row: doubling, capped. */
export const backoffMs = (s: NodeGateSettings, k: number) =>
  Math.min(s.retryBackoffMs * 2 ** Math.min(k - 1, 30), s.retryBackoffMaxMs);

export const isBeingRemoved = (n: V1Node) =>
  (n.spec?.taints ?? []).some(
    (t) => t.effect === 'NoSchedule' && Object.values(AutoscalerTaints).some((key) => key === t.key),
  );

/** The memory after seeing `n` at `now`: a rise in a count, a deletion taint's start; reset at zero. */
export function remember(memory: NodeGateMemory, n: V1Node, now: number): NodeGateMemory {
  const rise = (key: string, was?: { count: number; at: number }) => {
    const k = count(n, key);
    if (k === 0) return undefined;
    return was && was.count === k ? was : { count: k, at: now };
  };
  const failed = rise(Annotations.failures, memory.failed);
  const ineffective = rise(Annotations.ineffectiveReboots, memory.ineffective);
  const removedSince = isBeingRemoved(n) ? (memory.removedSince ?? now) : undefined;
  return {
    ...(failed ? { failed } : {}),
    ...(ineffective ? { ineffective } : {}),
    ...(removedSince === undefined ? {} : { removedSince }),
  };
}

/**
 * The node gates an attempt of `n` that started at `now` went past, each a detail; none when it went
 * through them. `raceMs`: a taint written as the operator admitted the node is a coincidence, not a gate
 * it skipped.
 */
export function gatesPassedBy(
  n: V1Node,
  memory: NodeGateMemory,
  settings: NodeGateSettings | undefined,
  now: number,
  raceMs: number,
): string[] {
  const name = n.metadata?.name ?? '';
  const out: string[] = [];
  if (n.metadata?.labels?.[Labels.skipped] === 'true')
    out.push(`${name}'s attempt started while it was labelled ${Labels.skipped}`);
  if (memory.removedSince !== undefined && now - memory.removedSince >= raceMs)
    out.push(
      `${name}'s attempt started while an autoscaler's deletion taint had been on it for ${Math.round((now - memory.removedSince) / 1000)}s`,
    );
  if (!settings) return out;
  const ineffective = count(n, Annotations.ineffectiveReboots);
  if (ineffective >= settings.maxIneffectiveReboots)
    out.push(
      `${name}'s attempt started after its need survived ${ineffective} reboots (maxIneffectiveReboots ${settings.maxIneffectiveReboots})`,
    );
  for (const [what, seen] of [
    ['failure', memory.failed],
    ['ineffective reboot', memory.ineffective],
  ] as const) {
    if (!seen) continue;
    const wait = backoffMs(settings, seen.count);
    if (now - seen.at < wait - raceMs)
      out.push(
        `${name}'s attempt started ${((now - seen.at) / 1000).toFixed(1)}s after its ${what} ${seen.count} in a row was seen, within its retry backoff of ${wait / 1000}s`,
      );
  }
  return out;
}

/**
 * An attempt of `n` just ended: a detail when its host had rebooted out of boot `rebootedFrom` and the
 * node still shows that boot (the end came before the kubelet posted the new boot ID), else none.
 */
export function endedBeforeNewBoot(n: V1Node, rebootedFrom: string | undefined): string | undefined {
  const bootId = n.status?.nodeInfo?.bootID;
  if (rebootedFrom === undefined || bootId !== rebootedFrom) return undefined;
  return `${n.metadata?.name}'s attempt ended while its kubelet still showed boot ${bootId}, which its host had rebooted out of: no health gate on the new boot`;
}

/**
 * An attempt of `n` for a refresh started: a detail when the node reports the same boot time as before
 * its last reboot (`bootTimeBefore`: it did not advance) and that reboot is not counted as ineffective.
 */
export function refreshNotCounted(n: V1Node, bootTimeBefore: string | undefined): string | undefined {
  const bootTime = n.metadata?.annotations?.[Annotations.bootTime];
  if (bootTimeBefore === undefined || bootTime !== bootTimeBefore) return undefined;
  if (count(n, Annotations.ineffectiveReboots) > 0) return undefined;
  return `${n.metadata?.name} refreshed again on boot time ${bootTime}, which did not advance across its reboot, and that reboot not counted as ineffective`;
}
