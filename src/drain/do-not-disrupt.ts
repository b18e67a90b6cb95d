/**
 * A pod's `nuo.dev/do-not-disrupt` ("true", or a Go duration from the pod's start, e.g. "4h"): whether
 * it holds now, and until when. A value that is neither holds like "true", and the reason names it: a
 * typo must not let the pod be disrupted. Finished pods ask nothing.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { PodAnnotations } from '../api/keys.ts';
import { parseDuration } from '../util/duration.ts';

/** The longest annotation value repeated in a reason. */
const VALUE_MAX = 64;

export interface PodHold {
  /** e.g. `pod app/db-0 has nuo.dev/do-not-disrupt="4h" until 2026-11-25T14:00:00.000Z` */
  reason: string;
  /** Epoch milliseconds; Infinity for "true" or a value that does not parse. */
  until: number;
}

/** Why `pod` asks not to be disrupted at `now`, and until when; undefined when it does not. */
export function podHold(pod: V1Pod, now: number): PodHold | undefined {
  const value = pod.metadata?.annotations?.[PodAnnotations.doNotDisrupt];
  const phase = pod.status?.phase;
  if (value === undefined || phase === 'Succeeded' || phase === 'Failed') return undefined;
  const until = untilOf(value, pod.status?.startTime, now);
  if (until <= now) return undefined;
  const shown = value.length > VALUE_MAX ? `${value.slice(0, VALUE_MAX)}…` : value;
  const when = Number.isFinite(until) ? ` until ${new Date(until).toISOString()}` : '';
  const name = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
  return { reason: `pod ${name} has ${PodAnnotations.doNotDisrupt}="${shown}"${when}`, until };
}

/** When a value stops holding: never for "true" or a bad value, start + duration for a duration. */
function untilOf(value: string, startTime: Date | string | undefined, now: number): number {
  if (value === 'true') return Number.POSITIVE_INFINITY;
  let ms: number;
  try {
    ms = parseDuration(value);
  } catch {
    return Number.POSITIVE_INFINITY;
  }
  const start = startTime ? new Date(startTime).getTime() : now;
  return start + ms;
}
