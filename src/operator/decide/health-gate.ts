/**
 * The health gate after a reboot: what it waits for (the soak, DaemonSet pods, after-reboot hooks, the
 * agent's report, the policy's health checks) and when the controller reads the DaemonSet pods for it.
 */
import { Phase } from '../../api/phases.ts';
import type { CheckResult } from '../../policy/health-checks.ts';
import { ms } from './need.ts';
import type { NodeView } from './node-view.ts';

export interface Health {
  /** The node's DaemonSet pods are all Ready. */
  daemonSetPodsReady: boolean;
  detail: string;
}

/**
 * Whether the health gate needs a node's DaemonSet pods read this pass: it is in AfterReboot, Ready, and
 * has soaked. Read earlier only to wait for the soak, a pod list per soaking node per pass slows every
 * pass (and every grant) of a large rollout.
 */
export function healthDue(n: NodeView, c: { soakMs: number }, now: Date): boolean {
  return n.state === Phase.afterReboot && n.ready && now.getTime() - ms(n.readySince) >= c.soakMs;
}

/**
 * How long before its soak ends a slot holder's DaemonSet pods are first read, and how often a reading
 * is renewed: read only once the soak is over, the pods' list and another pass would stand between the
 * soak's end and every completion. The soak proves the node Ready throughout; the pods' reading is a
 * point in time either way, at most HEALTH_LEAD_MS + HEALTH_REREAD_MS old at the completion.
 */
export const HEALTH_LEAD_MS = 2000;
export const HEALTH_REREAD_MS = 1000;

/** Whether a slot holder's DaemonSet pods are to be read (and a reading kept): its soak ends within HEALTH_LEAD_MS. */
export function healthGated(n: NodeView, c: { soakMs: number }, now: Date): boolean {
  return healthDue(n, { soakMs: Math.max(0, c.soakMs - HEALTH_LEAD_MS) }, now);
}

/**
 * Whether a gated node's last reading is renewed: one that found pods not ready every HEALTH_REREAD_MS;
 * a healthy one when it would be older than HEALTH_LEAD_MS + HEALTH_REREAD_MS, which a node completing
 * at the end of its soak never reaches (one read a node), and one held longer (hooks, its agent) does.
 */
export function healthRereadDue(last: { healthy: boolean; ageMs: number }): boolean {
  return last.ageMs >= (last.healthy ? HEALTH_LEAD_MS : 0) + HEALTH_REREAD_MS;
}

/** The hook annotations (keys) that do not read "true" on the node yet. */
export function missingHooks(n: NodeView, keys: readonly string[]): string[] {
  return keys.filter((k) => n.annotations[k] !== 'true');
}

/**
 * What the pool's health checks read last (UpdatePolicy healthChecks), for its finished nodes: `at` is
 * when (absent: not evaluated yet), `failing` the first failing check and what it read.
 */
export interface ChecksReading {
  at?: number;
  failing?: CheckResult;
  /** The last reading is older than the policy's readings.maxAge, and why in words: it holds. */
  expired?: string;
}

/** The wait for a reading of the health checks newer than the node's return (it comes within an interval). */
export const FRESH_CHECKS = 'a reading of the health checks taken after the node came back';

/**
 * Why a finished node keeps its slot for the pool's health checks: one fails, or none was read since the
 * node came back (`since`: when this leader first saw it Ready at the health gate, on its own clock), so a
 * failure its reboot caused is caught before the next node is admitted.
 */
export function checksWait(checks: ChecksReading | undefined, since: number): string | undefined {
  if (!checks) return undefined;
  if (checks.expired) return `the health checks (${checks.expired})`;
  if (checks.at === undefined) return 'the health checks (not evaluated yet)';
  // The check's name only: its reading may change every round, and each change would be a node write.
  if (checks.failing) return `the health checks (health check ${checks.failing.name} fails)`;
  if (checks.at < since) return FRESH_CHECKS;
  return undefined;
}
