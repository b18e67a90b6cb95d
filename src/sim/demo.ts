/**
 * `nuo demo`: a real control plane with simulated nodes running Deployments under PDBs; every node is
 * marked as needing a reboot, and `nuo operator` plus one agent per node roll the reboot through them
 * under an UpdatePolicy (a budget, a cap per zone, a maintenance window open now) while the independent
 * checker watches both budgets. Ends with the policy's status and a summary against the ideal lower bound.
 */
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PolicyV1Api,
  type V1PodDisruptionBudget,
} from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { API_GROUP, API_VERSION, PLAN, UPDATE_POLICY } from '../api/crd.ts';
import { Annotations } from '../api/keys.ts';
import { PHASES, Phase } from '../api/phases.ts';
import { type Condition, DAYS, type UpdatePolicy, type UpdatePolicySpec } from '../api/update-policy.ts';
import { ResilientInformer } from '../kube/informer.ts';
import { pollUntil } from '../util/poll.ts';
import { type LocalCluster, startCluster } from './cluster/cluster.ts';
import { DEMO_PLAN, DEMO_PLAN_REF, demoPlan, demoPlanConcurrency, upgraded } from './demo-plan.ts';
import { type DemoVms, startDemoVms } from './demo-vms.ts';
import { Fleet } from './fleet.ts';
import { type Moves, movesLine } from './moves.ts';
import { MovesObserver } from './moves-observe.ts';
import { readPlan } from './plans.ts';
import { NS } from './vm/install-nuo.ts';
import { daemonSet, deployDemoWorkload } from './workload.ts';

export interface DemoOptions {
  nodes: number;
  zones: number;
  maxUnavailable: number;
  maxUnavailablePerZone: number;
  rebootMs: number;
  soakMs: number;
  /** Also apply an upgrade Plan to every node (demo-plan.ts), under the same budget as the reboots. */
  plan: boolean;
  /** Keep the cluster up after the rollout until Ctrl-C. */
  keep: boolean;
  /** VM nodes beside the KWOK ones, nuo installed on them from its chart (demo-vms.ts); 0 for none. */
  vms: number;
  out: (text: string) => void;
  tty: boolean;
  /** Given the rollout's evictions per pod and the cluster's versions once it is done (bench/demo-moves.ts). */
  onMoves?: (moves: Moves, versions: LocalCluster['binaries']['versions']) => void;
}

interface Observed {
  pdbViolations: string[];
}

/** Records PDB breaches and the pods' moves in the demo namespace, independently of the operator. */
async function observeWorkload(
  cluster: LocalCluster,
  namespace: string,
): Promise<{ observed: Observed; moves: MovesObserver; stop: () => Promise<void> }> {
  const policy = cluster.kubeconfig.makeApiClient(PolicyV1Api);
  const observed: Observed = { pdbViolations: [] };
  const moves = new MovesObserver(cluster.kubeconfig, namespace);
  const pdbs = new ResilientInformer<V1PodDisruptionBudget>({
    kubeconfig: cluster.kubeconfig,
    path: `/apis/policy/v1/namespaces/${namespace}/poddisruptionbudgets`,
    list: (o) => policy.listNamespacedPodDisruptionBudget({ namespace, ...o }),
    name: 'demo-pdbs',
  });
  pdbs.onEvent((_type, pdb) => {
    const s = pdb.status;
    if (
      s &&
      s.observedGeneration === pdb.metadata?.generation &&
      (s.currentHealthy ?? 0) < (s.desiredHealthy ?? 0)
    ) {
      observed.pdbViolations.push(
        `${pdb.metadata?.name}: ${s.currentHealthy} healthy < ${s.desiredHealthy} desired`,
      );
    }
  });
  await Promise.all([moves.start(), pdbs.start()]);
  return { observed, moves, stop: async () => void (await Promise.all([moves.stop(), pdbs.stop()])) };
}

const ZONE = 'topology.kubernetes.io/zone';
const hh = (h: number) => `${String(h % 24).padStart(2, '0')}:00`;

/**
 * The demo's UpdatePolicy: every node, the budget and zone cap asked for, and a weekly window of today
 * (UTC) from this hour for three hours, so the rollout runs inside it (a window that wraps midnight is
 * one too); the soak is the demo's.
 */
export function demoPolicy(o: DemoOptions, now: Date): UpdatePolicySpec {
  const today = DAYS[(now.getUTCDay() + 6) % 7] ?? 'Mon';
  return {
    maxUnavailable: o.maxUnavailable,
    maxUnavailablePerZone: o.maxUnavailablePerZone,
    windows: {
      weekly: [
        { days: [today], start: hh(now.getUTCHours()), end: hh(now.getUTCHours() + 3), timeZone: 'UTC' },
      ],
    },
    reboot: { soak: `${o.soakMs}ms` },
  };
}

const conditionLines = (conditions: readonly Condition[] = []) =>
  conditions.map((c) => `  ${c.type.padEnd(16)} ${c.status.padEnd(6)} ${c.reason}: ${c.message}`);

const conditionIs = (conditions: readonly Condition[] | undefined, type: string, reason: string) =>
  conditions?.some((c) => c.type === type && c.reason === reason) ?? false;

/**
 * The policy's conditions (and the Plan's, if one is applied) as their status says them, a line each:
 * once the status says the rollout is done (the operator writes it after the pass that saw the last node
 * finish), or as it stands after STATUS_WAIT_MS.
 */
async function statusReport(cluster: LocalCluster, plan: boolean): Promise<string[]> {
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  const read = async () => {
    const p = (await custom.getClusterCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      plural: UPDATE_POLICY.plural,
      name: 'demo',
    })) as UpdatePolicy;
    const up = plan ? await readPlan(cluster, DEMO_PLAN.namespace, DEMO_PLAN.name) : undefined;
    const done =
      conditionIs(p.status?.conditions, 'Progressing', 'UpToDate') &&
      (!up || conditionIs(up.status?.conditions, 'Complete', 'Complete'));
    return { p, up, done };
  };
  let last = await read();
  await pollUntil(
    'the statuses to say the rollout is done',
    async () => {
      last = await read();
      return last.done ? true : undefined;
    },
    { timeoutMs: STATUS_WAIT_MS, intervalMs: 250 },
  ).catch(() => {});
  const lines = ['', 'UpdatePolicy demo, as its status says:', ...conditionLines(last.p.status?.conditions)];
  if (!last.up) return lines;
  return [
    ...lines,
    '',
    `Plan ${DEMO_PLAN_REF}, as its status says:`,
    ...conditionLines(last.up.status?.conditions),
  ];
}

/** How long the report waits for the statuses to catch up with the last node's end. */
const STATUS_WAIT_MS = 15_000;

const JOB_MS = 3000;

/**
 * The ideal time of the demo's rollout (seconds): waves of the budget's width, each node's attempt its
 * Job (none without a Plan), its reboot and its soak.
 */
export const idealSeconds = (o: {
  nodes: number;
  maxUnavailable: number;
  rebootMs: number;
  soakMs: number;
  jobMs: number;
}) => (Math.ceil(o.nodes / o.maxUnavailable) * (o.jobMs + o.rebootMs + o.soakMs)) / 1000;

/** Shows a manifest as `kubectl get -o yaml` would, indented. */
function manifestText(title: string, manifest: object): string {
  // Strings quoted: a YAML 1.1 reader (kubectl) takes an unquoted 08:00 for the number 480.
  const yaml = stringify(manifest, { defaultStringType: 'QUOTE_DOUBLE', defaultKeyType: 'PLAIN' });
  return `\n${title}:\n${yaml.trimEnd().replace(/^/gm, '  ')}`;
}

function bar(done: number, total: number, width = 30): string {
  const filled = total === 0 ? width : Math.round((done / total) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
}

export async function runDemo(o: DemoOptions): Promise<number> {
  const log = (line: string) => o.out(`${line}\n`);
  const started = Date.now();
  const vmPart = o.vms > 0 ? ` and ${o.vms} VM nodes` : '';
  log(`Starting a local Kubernetes control plane with ${o.nodes} KWOK nodes${vmPart} in ${o.zones} zone(s)…`);
  const cluster = await startCluster({ nodes: o.nodes, zones: o.zones, log: (l) => log(`  ${l}`) });
  let fleet: Fleet | undefined;
  let vms: DemoVms | undefined;
  let watch: Awaited<ReturnType<typeof observeWorkload>> | undefined;
  try {
    const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
    const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
    await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
    log(await deployDemoWorkload(cluster.kubeconfig, { replicasPerApp: o.nodes }));
    await apps.createNamespacedDaemonSet({ namespace: 'demo', body: daemonSet('demo', 'log-shipper') });
    log('  daemonset demo/log-shipper: one pod per node (the health gate waits for it after each reboot)');
    const kwokNodes = (await core.listNode()).items.map((n) => n.metadata?.name ?? '');
    if (o.vms > 0) {
      log(`Booting ${o.vms} VM nodes (systemd, containerd, a real kubelet) and joining them…`);
      vms = await startDemoVms(cluster, {
        count: o.vms,
        zones: o.zones,
        namespace: 'demo',
        log: (l) => log(`  ${l}`),
      });
    }
    watch = await observeWorkload(cluster, 'demo');
    const budget = {
      name: 'demo',
      selects: () => true,
      max: o.maxUnavailable,
      zones: { label: ZONE, max: o.maxUnavailablePerZone },
    };
    const timing = { ...o, jobMs: o.plan ? JOB_MS : 0 };
    const plans = o.plan ? [{ name: DEMO_PLAN_REF, max: demoPlanConcurrency(o) }] : [];
    fleet = new Fleet(cluster, {
      rebootMs: o.rebootMs,
      budget: [budget],
      plans,
      ...(vms ? { nodes: kwokNodes } : {}),
    });
    await fleet.start();
    const spec = demoPolicy(o, new Date());
    await fleet.applyPolicy(spec, 'demo');
    const apiVersion = `${API_GROUP}/${API_VERSION}`;
    const manifest = { apiVersion, kind: UPDATE_POLICY.kind, metadata: { name: 'demo' }, spec };
    log(manifestText('UpdatePolicy (kubectl get updatepolicy demo -o yaml)', manifest));
    if (o.plan) {
      const p = demoPlan(timing);
      await fleet.applyPlan(p);
      const metadata = { name: p.name, namespace: p.namespace, annotations: p.annotations };
      log(
        manifestText(`Plan (kubectl get plan -n ${p.namespace} ${p.name} -o yaml)`, {
          apiVersion,
          kind: PLAN.kind,
          metadata,
          spec: p.spec,
        }),
      );
      log(
        `  each node in one slot: drained, the Job (${JOB_MS / 1000}s: KWOK completes its pod), nuo's reboot, the health gate`,
      );
    }
    if (vms) {
      log(`Operator: the chart's, on the VM nodes (kubectl -n ${NS} logs deploy/nuo-operator)`);
      log(
        `Marking every node as needing a reboot (simulated reboot: ${o.rebootMs / 1000}s; the VMs reboot for real)…\n`,
      );
    } else {
      fleet.startOperator('demo', []);
      log(`Operator: nuo operator (log: ${cluster.dir}/logs/operator-demo.log)`);
      log(`Marking every node as needing a reboot (simulated reboot: ${o.rebootMs / 1000}s)…\n`);
    }
    const rolloutStart = Date.now();
    fleet.stageUpdates();
    await vms?.stage(fleet.checker);
    const f = fleet;

    let lastLine = '';
    let lastPrint = 0;
    const render = async (): Promise<true | undefined> => {
      const nodes = (await core.listNode()).items;
      const counts = new Map<string, number>();
      for (const n of nodes) {
        const state = n.metadata?.annotations?.[Annotations.state] ?? Phase.idle;
        counts.set(state, (counts.get(state) ?? 0) + 1);
      }
      const done = nodes.filter(
        (n) =>
          f.checker.rebootsOf(n.metadata?.name ?? '') >= 1 &&
          (n.metadata?.annotations?.[Annotations.state] ?? Phase.idle) === Phase.idle &&
          n.metadata?.annotations?.[Annotations.rebootNeeded] === undefined,
      ).length;
      const applied = o.plan ? upgraded(nodes) : nodes.length;
      const planPart = o.plan ? `${applied}/${nodes.length} upgraded  ` : '';
      const phases = PHASES.filter((p) => counts.get(p))
        .map((p) => `${p} ${counts.get(p)}`)
        .join('  ');
      const line = `${bar(Math.min(done, applied), nodes.length)} ${done}/${nodes.length} rebooted  ${planPart}${((Date.now() - rolloutStart) / 1000).toFixed(0)}s  | ${phases} | disrupted now ${f.checker.disrupted().length}, max ${f.checker.maxDisrupted}/${o.maxUnavailable}`;
      if (o.tty) o.out(`\r\x1b[2K${line}`);
      else if (line !== lastLine && Date.now() - lastPrint > 2000) {
        log(line);
        lastPrint = Date.now();
      }
      lastLine = line;
      return done === nodes.length && applied === nodes.length ? true : undefined;
    };
    const timeoutMs =
      Math.max(
        300_000,
        Math.ceil(o.nodes / o.maxUnavailable) * (timing.jobMs + o.rebootMs + o.soakMs + 30_000),
      ) + (vms ? o.vms * (3 * vms.fleet.bootToReadyMs + 120_000) : 0);
    await pollUntil('the rollout to finish', render, { timeoutMs, intervalMs: 250 });
    if (o.tty) o.out('\n');
    else log(lastLine);
    const elapsed = (Date.now() - rolloutStart) / 1000;
    const nodeNames = (await core.listNode()).items.map((n) => n.metadata?.name ?? '');
    const moved = watch.moves.moves(nodeNames, o.maxUnavailable);
    o.onMoves?.(moved, cluster.binaries.versions);
    await f.checker.finalCheck();
    log((await statusReport(cluster, o.plan)).join('\n'));
    const nodeCount = nodeNames.length;
    const ideal = idealSeconds(timing);
    const job = o.plan ? `Job ${JOB_MS / 1000}s + ` : '';
    const idealHow = `ceil(${o.nodes}/${o.maxUnavailable}) × (${job}reboot ${o.rebootMs / 1000}s + soak ${o.soakMs / 1000}s)`;
    const budgetViolations = f.checker.violations.filter((v) => v.rule === 'budget').length;
    const otherViolations = f.checker.violations.filter((v) => v.rule !== 'budget');
    log(
      [
        '',
        'Summary',
        `  nodes rebooted            ${nodeCount} (each exactly once: ${nodeNames.every((n) => f.checker.rebootsOf(n) === 1) ? 'yes' : 'NO'})`,
        `  elapsed                   ${elapsed.toFixed(1)}s`,
        vms
          ? `  VM nodes                  ${vms.names.join(', ')}: rebooted for real under ${vms.fleet.accel.toUpperCase()} (serial consoles in ${cluster.dir}/logs)`
          : `  ideal lower bound         ${ideal.toFixed(1)}s = ${idealHow}; efficiency ${((ideal / elapsed) * 100).toFixed(0)}%`,
        `  most nodes disrupted      ${f.checker.maxDisrupted} (maxUnavailable ${o.maxUnavailable}, at most ${o.maxUnavailablePerZone} per zone)`,
        ...(o.plan
          ? [
              `  ${`Plan ${DEMO_PLAN.name} applied`.padEnd(26)}${o.nodes} nodes; most at once ${f.checker.maxOfPlan.get(DEMO_PLAN_REF) ?? 0} (concurrency ${demoPlanConcurrency(o)})`,
            ]
          : []),
        `  evictions per pod         ${movesLine(moved)}`,
        `  budget violations         ${budgetViolations}`,
        `  PDB violations            ${watch.observed.pdbViolations.length}`,
        `  other safety violations   ${otherViolations.length}${otherViolations.map((v) => `\n    ${v.rule}: ${v.detail}`).join('')}`,
        `  total time with set-up    ${((Date.now() - started) / 1000).toFixed(1)}s`,
        '',
      ].join('\n'),
    );
    const ok = f.checker.violations.length === 0 && watch.observed.pdbViolations.length === 0;
    if (o.keep) {
      log(
        `The cluster stays up: export KUBECONFIG=${cluster.kubeconfigPath}; node bin/nuo.js status${o.plan ? `; node bin/nuo.js plan ${DEMO_PLAN.name}` : ''}. Ctrl-C stops it.`,
      );
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
    }
    return ok ? 0 : 1;
  } finally {
    await watch?.stop();
    await fleet?.stop();
    await vms?.stop();
    await cluster.stop();
  }
}
