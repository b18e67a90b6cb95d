/**
 * A pod a drain is about to evict, read again just before each eviction: one gone, or replaced by a new
 * pod of its name, is done with; one that asks not to be disrupted now (`nuo.dev/do-not-disrupt`, added
 * while a lower tier or a PodDisruptionBudget's refusal held the drain) holds the drain and is not
 * evicted; any other is evicted on the condition that it is still as read (its resourceVersion), so an
 * annotation written between the read and the eviction makes the eviction fail instead. Pure.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { podHold } from './do-not-disrupt.ts';

export type EvictionCheck = { gone: true } | { held: string } | { evict: { resourceVersion?: string } };

export function checkBeforeEviction(uid: string, live: V1Pod | undefined, now: number): EvictionCheck {
  if (!live || live.metadata?.uid !== uid) return { gone: true };
  const hold = podHold(live, now);
  if (hold) return { held: hold.reason };
  const resourceVersion = live.metadata?.resourceVersion;
  return { evict: resourceVersion ? { resourceVersion } : {} };
}
