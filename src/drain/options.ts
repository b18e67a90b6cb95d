/**
 * Drain options, named as `kubectl drain` names them so that its users know what each one does.
 * Unlike kubectl, a drain is bounded by default: `timeoutSeconds` 0 (no limit) must be asked for.
 */
import { type WaitFor, waitForProblems } from './wait-for.ts';

export interface DrainOptions {
  /** Evict pods that no controller would recreate (kubectl --force). */
  force: boolean;
  /** Leave DaemonSet-managed pods in place instead of refusing (kubectl --ignore-daemonsets). */
  ignoreDaemonSets: boolean;
  /** Evict pods with emptyDir volumes, whose data is lost (kubectl --delete-emptydir-data). */
  deleteEmptyDirData: boolean;
  /** Only pods matching this label selector are considered (kubectl --pod-selector); "" for all. */
  podSelector: string;
  /** Grace period for each pod; -1 uses the pod's own (kubectl --grace-period). */
  gracePeriodSeconds: number;
  /** Give up after this long; 0 waits forever (kubectl --timeout). */
  timeoutSeconds: number;
  /** Do not wait for pods whose deletion started this many seconds ago; 0 always waits. */
  skipWaitForDeleteTimeoutSeconds: number;
  /** Delete pods directly, bypassing PodDisruptionBudgets (kubectl --disable-eviction). */
  disableEviction: boolean;
  /** Evictions in flight at once. */
  concurrency: number;
  /** Objects per page of each list (kubectl --chunk-size). */
  chunkSize: number;
  /** Pods waited for instead of evicted, each rule bounded (wait-for.ts); first matching rule wins. */
  waitFor: WaitFor[];
}

export const DEFAULT_DRAIN_OPTIONS: DrainOptions = {
  force: false,
  ignoreDaemonSets: true,
  deleteEmptyDirData: false,
  podSelector: '',
  gracePeriodSeconds: -1,
  timeoutSeconds: 600,
  skipWaitForDeleteTimeoutSeconds: 0,
  disableEviction: false,
  concurrency: 50,
  chunkSize: 500,
  waitFor: [],
};

/** Validates a partial option set and fills in defaults; throws with every problem found. */
export function drainOptions(input: Partial<DrainOptions> = {}): DrainOptions {
  const options = { ...DEFAULT_DRAIN_OPTIONS, ...input };
  const problems: string[] = [];
  const int = (name: keyof DrainOptions, min: number) => {
    const v = options[name];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min)
      problems.push(`${name} must be an integer ≥ ${min}, got ${v}`);
  };
  int('gracePeriodSeconds', -1);
  int('timeoutSeconds', 0);
  int('skipWaitForDeleteTimeoutSeconds', 0);
  int('concurrency', 1);
  int('chunkSize', 1);
  for (const name of ['force', 'ignoreDaemonSets', 'deleteEmptyDirData', 'disableEviction'] as const) {
    if (typeof options[name] !== 'boolean')
      problems.push(`${name} must be true or false, got ${options[name]}`);
  }
  if (typeof options.podSelector !== 'string') problems.push('podSelector must be a label selector string');
  if (!Array.isArray(options.waitFor)) problems.push('waitFor must be a list of rules');
  else problems.push(...waitForProblems(options.waitFor));
  if (problems.length > 0) throw new Error(`invalid drain options: ${problems.join('; ')}`);
  return options;
}
