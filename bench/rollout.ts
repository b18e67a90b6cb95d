/**
 * npm run bench:rollout [-- --nodes N --max-unavailable K --reboot-time R --soak S]
 *
 * A full rollout on the local cluster (simulated hosts, `nuo operator`, Deployments under PDBs with about
 * two pods per node) and its figures:
 * - efficiency: the ideal ceil(N/K)·(R + soak) over the measured rollout time (drain time counted as 0 in
 *   the ideal, so the figure is conservative);
 * - grant latency: from a slot freed (a node back to Idle while K slots were in use) to the next
 *   admission, p50 and p99, observed by an independent watch on the nodes.
 */
import { parseArgs } from 'node:util';
import { AppsV1Api, CoreV1Api, PolicyV1Api, type V1Node } from '@kubernetes/client-node';
import { Annotations } from '../src/api/keys.ts';
import { Phase } from '../src/api/phases.ts';
import { ResilientInformer } from '../src/kube/informer.ts';
import { startCluster } from '../src/sim/cluster/cluster.ts';
import { Fleet } from '../src/sim/fleet.ts';
import { deployment, waitAvailable } from '../src/sim/workload.ts';
import { parseDuration } from '../src/util/duration.ts';
import { pollUntil } from '../src/util/poll.ts';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '200' },
    'max-unavailable': { type: 'string', default: '10' },
    'reboot-time': { type: 'string', default: '5s' },
    soak: { type: 'string', default: '1s' },
  },
  strict: true,
});
const nodes = Number(values.nodes);
const k = Number(values['max-unavailable']);
if (!Number.isInteger(nodes) || nodes < 1 || !Number.isInteger(k) || k < 1) {
  throw new Error('--nodes and --max-unavailable must be positive integers');
}
const rebootMs = parseDuration(values['reboot-time']);
const soakMs = parseDuration(values.soak);

const cluster = await startCluster({ nodes, zones: 3 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
const policy = cluster.kubeconfig.makeApiClient(PolicyV1Api);
let fleet: Fleet | undefined;
let informer: ResilientInformer<V1Node> | undefined;
try {
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
  await core.createNamespace({ body: { metadata: { name: 'bench' } } });
  await pollUntil('default ServiceAccount', () =>
    core.readNamespacedServiceAccount({ name: 'default', namespace: 'bench' }).then(() => true),
  );
  const apps_ = Math.max(1, Math.round(nodes / 10));
  for (let i = 0; i < apps_; i++) {
    const name = `app-${i}`;
    await apps.createNamespacedDeployment({ namespace: 'bench', body: deployment('bench', name, 20) });
    await policy.createNamespacedPodDisruptionBudget({
      namespace: 'bench',
      body: { metadata: { name }, spec: { maxUnavailable: 2, selector: { matchLabels: { app: name } } } },
    });
  }
  for (let i = 0; i < apps_; i++) await waitAvailable(apps, 'bench', `app-${i}`, 300_000);

  // Independent observer: every phase change, timestamped when seen.
  const transitions: Array<{ node: string; phase: string; at: number }> = [];
  const last = new Map<string, string>();
  informer = new ResilientInformer<V1Node>({
    kubeconfig: cluster.kubeconfig,
    path: '/api/v1/nodes',
    list: (o) => core.listNode(o),
    name: 'bench',
  });
  informer.onEvent((_type, n) => {
    const name = n.metadata?.name ?? '';
    const phase = n.metadata?.annotations?.[Annotations.state] ?? Phase.idle;
    if (last.get(name) !== phase) {
      last.set(name, phase);
      transitions.push({ node: name, phase, at: performance.now() });
    }
  });
  await informer.start();

  fleet = new Fleet(cluster, { rebootMs, budget: k, agentCheckIntervalMs: 60_000 });
  await fleet.start();
  const f = fleet;
  f.startOperator('bench', [`--max-unavailable=${k}`, `--soak=${soakMs}ms`]);
  const started = performance.now();
  f.stageUpdates();
  await pollUntil(
    'the rollout to finish',
    () =>
      [...f.hosts.keys()].every(
        (n) =>
          f.checker.rebootsOf(n) === 1 &&
          informer?.get(n)?.metadata?.annotations?.[Annotations.state] === Phase.idle,
      )
        ? true
        : undefined,
    { timeoutMs: Math.ceil(nodes / k) * (rebootMs + soakMs + 60_000), intervalMs: 200 },
  );
  const elapsedMs = performance.now() - started;
  f.checker.finalCheck();

  // Grant latency: each admission that had to wait for a slot, measured from the completion that freed it.
  const latencies: number[] = [];
  let holders = 0;
  let freedAt: number | undefined;
  for (const t of transitions.filter((x) => x.at >= started)) {
    if (t.phase === Phase.beforeReboot) {
      if (holders === k - 1 && freedAt !== undefined) latencies.push(t.at - freedAt);
      holders++;
      freedAt = undefined;
    } else if (t.phase === Phase.idle && holders > 0) {
      holders--;
      if (holders === k - 1) freedAt = t.at;
    }
  }
  latencies.sort((a, b) => a - b);
  const pct = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? Number.NaN;
  const ideal = Math.ceil(nodes / k) * (rebootMs + soakMs);
  process.stdout.write(
    [
      '',
      `Rollout of ${nodes} simulated nodes — maxUnavailable ${k}, reboot ${rebootMs / 1000}s, soak ${soakMs / 1000}s, ${apps_ * 20} pods under ${apps_} PDBs; Kubernetes ${cluster.binaries.versions.kubernetes}`,
      '',
      '| figure | value |',
      '|---|---|',
      `| rollout time | ${(elapsedMs / 1000).toFixed(1)} s |`,
      `| ideal lower bound ceil(N/K)·(R + soak) | ${(ideal / 1000).toFixed(1)} s |`,
      `| efficiency | ${((ideal / elapsedMs) * 100).toFixed(1)} % |`,
      `| grant latency p50 / p99 (${latencies.length} waits) | ${pct(50).toFixed(0)} ms / ${pct(99).toFixed(0)} ms |`,
      `| most nodes disrupted at once | ${f.checker.maxDisrupted} |`,
      `| safety violations | ${f.checker.violations.length} |`,
      '',
      `reproduce: npm run bench:rollout -- --nodes ${nodes} --max-unavailable ${k} --reboot-time ${values['reboot-time']} --soak ${values.soak}`,
      '',
    ].join('\n'),
  );
} finally {
  await informer?.stop();
  await fleet?.stop();
  await cluster.stop();
}
