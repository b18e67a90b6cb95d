/**
 * Shared set-up for integration tests: one real local cluster per test file, stopped after the file's
 * tests, with every component's log printed if any test in the file failed.
 */
import { type ChildProcess, execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ApiException, type CoreV1Api, type CoreV1Event } from '@kubernetes/client-node';
import { Annotations, Labels, SCALE_DOWN_PROTECTION } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { UpdatePolicySpec } from '../../src/api/update-policy.ts';
import { mergePatch, strategicMergePatch } from '../../src/kube/patch.ts';
import { type ClusterOptions, type LocalCluster, startCluster } from '../../src/sim/cluster/cluster.ts';
import type { Fleet } from '../../src/sim/fleet.ts';
import { pollUntil } from '../../src/util/poll.ts';

export async function useCluster(options: ClusterOptions = {}): Promise<LocalCluster> {
  const cluster = await startCluster(options);
  let failed = false;
  afterEach((t) => {
    // TestContext.passed exists since Node 21.7 but is missing from @types/node.
    if ((t as { passed?: boolean }).passed === false) failed = true;
  });
  after(async () => {
    if (failed) {
      process.stderr.write(`\n=== local cluster logs (a test failed) ===\n${cluster.logTails(60)}\n`);
    }
    await cluster.stop();
  });
  return cluster;
}

/** One JSON line of an operator's log (pino). */
export interface LogLine {
  msg: string;
  node?: string;
  [key: string]: unknown;
}

/** The JSON log lines of the operator the fleet started under `identity`, as written so far. */
export function operatorLog(cluster: LocalCluster, identity: string): LogLine[] {
  return readFileSync(join(cluster.dir, 'logs', `operator-${identity}.log`), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

/**
 * Posts the node's Ready condition as its kubelet would (a strategic merge keeps the other conditions):
 * a test's way to stop or start a node's kubelet without the host's reboot.
 */
export function setNodeReady(core: CoreV1Api, name: string, ready: boolean, reason?: string) {
  const now = new Date();
  return core.patchNodeStatus(
    {
      name,
      body: {
        status: {
          conditions: [
            {
              type: 'Ready',
              status: ready ? 'True' : 'False',
              reason: reason ?? (ready ? 'KubeletReady' : 'KubeletNotReady'),
              lastHeartbeatTime: now,
              lastTransitionTime: now,
            },
          ],
        },
      },
    },
    strategicMergePatch,
  );
}

/**
 * Every node in `names` rebooted once (as the fleet's checker saw it) and Idle again; with `needCleared`,
 * its agent's nuo.dev/reboot-needed gone too (nuo's agents only: another project's agent has its own key).
 */
export async function rebootedOnce(
  core: CoreV1Api,
  f: Fleet,
  names: readonly string[],
  { needCleared = false } = {},
): Promise<void> {
  await pollUntil(
    `${names.join(', ')} rebooted once and Idle`,
    async () => {
      const nodes = (await core.listNode()).items.filter((n) => names.includes(n.metadata?.name ?? ''));
      const done = nodes.every(
        (n) =>
          n.metadata?.annotations?.[Annotations.state] === Phase.idle &&
          (!needCleared || n.metadata?.annotations?.[Annotations.rebootNeeded] === undefined) &&
          f.checker.rebootsOf(n.metadata?.name ?? '') === 1,
      );
      return done ? true : undefined;
    },
    { timeoutMs: 180_000, intervalMs: 250 },
  );
}

/** Leader election fast enough for seconds-long tests (production keeps client-go's 15 s / 10 s / 2 s). */
export const FAST_LEASE = ['--lease-duration=3s', '--renew-deadline=2s', '--retry-period=500ms'];

/**
 * Applies the fleet's UpdatePolicy — `spec` over every node, with a 1 s soak unless `spec` sets its own —
 * and starts an operator under it with fast leader election and `args` (later flags win).
 */
export async function operatorUnder(
  f: Fleet,
  identity: string,
  spec: UpdatePolicySpec,
  args: string[] = [],
): Promise<ChildProcess> {
  await f.applyPolicy({ ...spec, reboot: { soak: '1s', ...spec.reboot } });
  return f.startOperator(identity, [...FAST_LEASE, ...args]);
}

/** The resourceVersion the Events have now: `eventsAbout(..., after)` counts only those written later. */
export async function eventsMark(core: CoreV1Api): Promise<string> {
  return (
    (await core.listNamespacedEvent({ namespace: 'default', limit: 1 })).metadata?.resourceVersion ?? '0'
  );
}

/**
 * Waits until the Events about `kind`/`name` (in the default namespace, where nuo records Events on
 * cluster-scoped objects) written after `after` (eventsMark) include every reason in `reasons`, and returns
 * them all in the order they were written.
 */
export async function eventsAbout(
  core: CoreV1Api,
  kind: 'Node' | 'UpdatePolicy' | 'Plan',
  name: string,
  reasons: readonly string[],
  after = '0',
  namespace = 'default',
): Promise<CoreV1Event[]> {
  const rv = (e: CoreV1Event) => Number(e.metadata?.resourceVersion ?? 0);
  let seen: CoreV1Event[] = [];
  return pollUntil(`${kind} ${name}'s Events: ${reasons.join(', ')}`, async () => {
    const list = await core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.kind=${kind},involvedObject.name=${name}`,
    });
    seen = list.items.filter((e) => rv(e) > Number(after)).sort((a, b) => rv(a) - rv(b));
    return reasons.every((r) => seen.some((e) => e.reason === r)) ? seen : undefined;
  }).catch((err: Error) => {
    throw new Error(
      `${err.message}; seen: ${seen.map((e) => `${e.type} ${e.reason}: ${e.message}`).join(' | ')}`,
    );
  });
}

/** The HTTP status of a failed API call; fails the test if the call succeeded. */
export async function statusOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    throw err;
  }
  throw new Error('expected the API call to fail, but it succeeded');
}

/**
 * A clean slate for the next rollout: no nuo key or test hook (any key with nuo.dev/ in it), no
 * autoscaler protection and no hook label on any node, nuo's cordons undone (every cordon with
 * `uncordonAll`), no ledger.
 */
export async function resetNodes(core: CoreV1Api, { uncordonAll = false } = {}): Promise<void> {
  for (const n of (await core.listNode()).items) {
    const a = n.metadata?.annotations ?? {};
    const clear: Record<string, null> = {};
    for (const key of Object.keys(a))
      if (key.includes('nuo.dev/') || SCALE_DOWN_PROTECTION.includes(key)) clear[key] = null;
    const uncordon = uncordonAll || a[Annotations.cordonedByNuo] === 'true';
    await core.patchNode(
      {
        name: n.metadata?.name ?? '',
        body: {
          metadata: {
            annotations: clear,
            labels: { [Labels.beforeReboot]: null, [Labels.afterReboot]: null },
          },
          ...(uncordon ? { spec: { unschedulable: false } } : {}),
        },
      },
      mergePatch,
    );
  }
  await core.deleteNamespacedConfigMap({ name: 'nuo-slots', namespace: 'nuo-system' }).catch(() => {});
}

const nuoBin = fileURLToPath(new URL('../../bin/nuo.js', import.meta.url));

/** Runs the `nuo` CLI against the local cluster. */
export function runNuo(
  cluster: LocalCluster,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [nuoBin, ...args, `--kubeconfig=${cluster.kubeconfigPath}`],
      { timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
