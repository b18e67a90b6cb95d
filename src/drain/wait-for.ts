/**
 * Pods a drain waits for instead of evicting (an UpdatePolicy's drain.waitFor, `nuo drain --wait-for`),
 * e.g. a batch Job's pod that should finish rather than start over elsewhere. Each wait is bounded
 * (maxWait, counted from when the node began draining, so a new leader does not restart it) and what
 * follows is explicit: Evict (through the Eviction API, its PodDisruptionBudget respected) or Fail (the
 * drain fails and the pod keeps running). The rest of the node is drained meanwhile.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { parseSelector } from '../kube/selector.ts';

export const AfterMaxWait = {
  /** Evict the pod once its wait ends, as any other (the default: the node's update goes ahead). */
  evict: 'Evict',
  /** Fail the drain once the wait ends, leaving the pod running: the attempt ends, retried later. */
  fail: 'Fail',
} as const;
export type AfterMaxWait = (typeof AfterMaxWait)[keyof typeof AfterMaxWait];

/** One rule: the pods it matches and how long they are waited for. */
export interface WaitFor {
  /** Names the rule in reasons and messages: "drain.waitFor[0]", "--wait-for app=etl". */
  name: string;
  /** The pods' label selector (text); it must select something. */
  selector: string;
  /** Their namespace's label selector (text); "" for every namespace. */
  namespaceSelector: string;
  maxWaitSeconds: number;
  afterMaxWait: AfterMaxWait;
}

/** The wait of one pod: the rule that matched it and when the wait ends. */
export interface PodWait {
  rule: string;
  /** Epoch milliseconds. */
  until: number;
  afterMaxWait: AfterMaxWait;
}

/** The rules a drain waits by, with the labels of the namespaces they may need. */
export interface WaitInput {
  rules: readonly WaitFor[];
  /** Labels by namespace name (read only when a rule has a namespace selector). */
  namespaceLabels: ReadonlyMap<string, Record<string, string>>;
  /** When the wait began: the node's Draining phase began, or the drain started. */
  since: Date;
}

/** The first rule that matches the pod, and until when it is waited for; undefined: none matches. */
export function waitOf(pod: V1Pod, input: WaitInput): PodWait | undefined {
  const namespace = pod.metadata?.namespace ?? '';
  for (const rule of input.rules) {
    if (!parseSelector(rule.selector)(pod.metadata?.labels ?? {})) continue;
    if (
      rule.namespaceSelector &&
      !parseSelector(rule.namespaceSelector)(input.namespaceLabels.get(namespace))
    )
      continue;
    return {
      rule: rule.name,
      until: input.since.getTime() + rule.maxWaitSeconds * 1000,
      afterMaxWait: rule.afterMaxWait,
    };
  }
  return undefined;
}

export interface WaitsDue {
  /** Pods whose wait ended under Evict: evict them now. */
  evict: string[];
  /** Pods whose wait ended under Fail: the drain fails. */
  fail: string[];
  /** The next end of a wait still running (epoch ms); undefined when none runs. */
  nextAt?: number;
}

/** Which of the pods still waited for are due at `now` (a wait ends at its `until`), and the next end. */
export function waitsDue(waited: readonly { uid: string; wait: PodWait }[], now: number): WaitsDue {
  const due: WaitsDue = { evict: [], fail: [] };
  for (const { uid, wait } of waited) {
    if (wait.until <= now) (wait.afterMaxWait === AfterMaxWait.fail ? due.fail : due.evict).push(uid);
    else due.nextAt = Math.min(due.nextAt ?? Number.POSITIVE_INFINITY, wait.until);
  }
  return due;
}

/** "pod ns/etl-1 (drain.waitFor[0]) until 2026-11-27T15:00:00.000Z, then evicted", for a node's reason. */
export function describeWait(pod: { namespace: string; name: string }, wait: PodWait): string {
  const then = wait.afterMaxWait === AfterMaxWait.fail ? 'the drain fails' : 'evicted';
  return `pod ${pod.namespace}/${pod.name} (${wait.rule}) to finish until ${new Date(wait.until).toISOString()}, then ${then}`;
}

/** Problems with the rules, each naming its rule; empty when they are usable. */
export function waitForProblems(rules: readonly WaitFor[]): string[] {
  const problems: string[] = [];
  for (const rule of rules) {
    for (const [field, text] of [
      ['selector', rule.selector],
      ['namespaceSelector', rule.namespaceSelector],
    ] as const) {
      try {
        parseSelector(text);
      } catch (err) {
        problems.push(`${rule.name}: ${field}: ${(err as Error).message}`);
      }
    }
    if (rule.selector.trim() === '')
      problems.push(`${rule.name}: an empty selector would wait for every pod: name the pods' labels`);
    if (!Number.isInteger(rule.maxWaitSeconds) || rule.maxWaitSeconds < 1)
      problems.push(`${rule.name}: maxWait must be at least 1s, got ${rule.maxWaitSeconds}s`);
    if (!Object.values(AfterMaxWait).includes(rule.afterMaxWait))
      problems.push(`${rule.name}: afterMaxWait must be Evict or Fail, got ${rule.afterMaxWait}`);
  }
  return problems;
}
