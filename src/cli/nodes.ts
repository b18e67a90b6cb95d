/** Commands people type about nodes: status, reboot, pause, resume. */
import { parseArgs } from 'node:util';
import { CoordinationV1Api, CoreV1Api, type V1NodeCondition } from '@kubernetes/client-node';
import { Annotations, LIFECYCLE_CONDITIONS } from '../api/keys.ts';
import { Phase, SLOT_PHASES } from '../api/phases.ts';
import { statusCode } from '../kube/errors.ts';
import { mergePatch } from '../kube/patch.ts';
import { needsReboot } from '../operator/decide/need.ts';
import { type NodeView, QUOTE_MAX } from '../operator/decide/node-view.ts';
import { ownedByNuo } from '../operator/write/lifecycle-conditions.ts';
import { type ClusterState, readClusterState } from './cluster-state.ts';
import { type Command, err, out, UsageError } from './command.ts';
import { explainApiError, kubeconfigFrom, nodeCommandArgs } from './kube.ts';
import { planLines } from './plan.ts';
import { sucPlansNamespace } from './plans.ts';
import { table } from './table.ts';
import { nodeCommandUsage, stateFlags, stateUsage } from './usage.ts';

function age(since: Date | undefined, now: Date): string {
  if (!since) return '-';
  const s = Math.max(0, Math.round((now.getTime() - since.getTime()) / 1000));
  return s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`;
}

/**
 * What `nuo status` says of a node: the operator's reason (which names malformed annotations and a pause
 * itself), else the need it sees; then only what that reason does not say yet — a pause, malformed
 * values, a problem the agent reported.
 */
/**
 * The node's lifecycle conditions (KEP-5683) that hold (status True), for `nuo status`: nuo's by type,
 * another writer's with its reason, so a person sees who says it.
 */
export function lifecycleColumn(conditions: readonly V1NodeCondition[] | undefined): string {
  const held = (conditions ?? []).filter(
    (c) => (LIFECYCLE_CONDITIONS as readonly string[]).includes(c.type) && c.status === 'True',
  );
  if (held.length === 0) return '-';
  return held.map((c) => (ownedByNuo(c) ? c.type : `${c.type} (${c.reason ?? 'no reason'})`)).join(',');
}

export function statusReason(n: NodeView, now: Date): string {
  const own = n.stateReason ?? needsReboot(n, now.getTime()) ?? '';
  const parts = [n.paused && !/\bpaused\b/.test(own) ? 'paused' : '', own];
  for (const p of n.problems) if (!own.includes(p)) parts.push(`malformed: ${p}`);
  const agent = n.annotations[Annotations.agentProblem];
  if (agent)
    parts.push(`agent: ${agent.length > 4 * QUOTE_MAX ? `${agent.slice(0, 4 * QUOTE_MAX)}…` : agent}`);
  return parts.filter(Boolean).join('; ') || '-';
}

/** The policies section of `nuo status`: each policy's pool, budget, window and blockers as it reports them. */
export function policyLines(state: ClusterState): string[] {
  if (state.policies.crdMissing)
    return [
      'policies: the UpdatePolicy CRD is not installed, so nuo touches no node (kubectl apply -k deploy)',
    ];
  if (state.raw.length === 0)
    return [
      'policies: none, so nuo touches no node (kubectl apply -f deploy/policies/default.yaml: every node, one at a time)',
    ];
  const lines = ['policies:'];
  for (const p of [...state.raw].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))) {
    const s = p.status;
    const condition = (type: string) => s?.conditions?.find((c) => c.type === type);
    const blocked = condition('Blocked');
    const ready = condition('Ready');
    const parts = [
      `${s?.nodes ?? '?'} node(s)`,
      `${s?.disrupted ?? '?'} of ${s?.budget ?? '?'} disrupted`,
      ready?.status === 'False' ? `invalid: ${ready.message}` : '',
      blocked?.status === 'True' ? `blocked (${blocked.reason}): ${blocked.message}` : 'open',
      s?.nextWindow ? `next window ${s.nextWindow}` : '',
      s?.observedGeneration !== undefined && s.observedGeneration !== p.metadata.generation
        ? 'status not yet updated'
        : '',
    ];
    lines.push(`  ${p.metadata.name}: ${parts.filter(Boolean).join('; ')}`);
  }
  for (const [node, names] of state.plan.conflicts)
    lines.push(`  ${node}: selected by ${names.join(' and ')}: left alone`);
  if (state.plan.unmatched.length > 0) {
    lines.push(`  no policy selects: ${state.plan.unmatched.join(', ')} (left alone)`);
  }
  return lines;
}

export const statusCommand: Command = {
  name: 'status',
  summary: 'phase of every node, who holds the budget and why others wait',
  usage: stateUsage(['Usage: nuo status [flags]', '', 'Flags:']),
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      options: stateFlags,
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    const kc = kubeconfigFrom(values);
    try {
      const now = new Date();
      const state = await readClusterState(kc, values.namespace, now, sucPlansNamespace(values));
      const { nodes, ledger } = state;
      const lease = await kc
        .makeApiClient(CoordinationV1Api)
        .readNamespacedLease({ name: 'nuo-operator', namespace: values.namespace })
        .catch(() => undefined);
      const holders = Object.keys(ledger.slots);
      const next = ledger.next ?? {};
      // As the operator counts them: any cordon without a slot behind it, nuo's too, is a disruption.
      const unavailable = nodes.filter((n) => !holders.includes(n.name) && (!n.ready || n.unschedulable));
      const why = (n: (typeof nodes)[number]) =>
        !n.ready
          ? 'NotReady'
          : n.cordonedByNuo
            ? 'cordoned by nuo without a slot'
            : 'cordoned by someone else';
      out(`leader: ${lease?.spec?.holderIdentity || '(none)'}`);
      out(
        `budget: ${holders.length} slot(s) held${holders.length ? ` by ${holders.join(', ')}` : ''}; ${unavailable.length} node(s) unavailable otherwise${unavailable.length ? ` (${unavailable.map((n) => `${n.name}: ${why(n)}`).join(', ')})` : ''}`,
      );
      for (const line of [...policyLines(state), ...planLines(state)]) out(line);
      out('');
      const poolOf = new Map(
        state.plan.pools.flatMap((p) => p.nodes.map((n) => [n.name, p.name || '(default)'] as const)),
      );
      const rows = [['NODE', 'PHASE', 'SLOT', 'FOR', 'READY', 'SCHEDULABLE', 'POOL', 'CONDITIONS', 'REASON']];
      for (const n of nodes) {
        const phase =
          n.state ?? (needsReboot(n, now.getTime()) ? 'needs reboot' : n.work ? 'needs a Plan' : Phase.idle);
        rows.push([
          n.name,
          phase,
          holders.includes(n.name)
            ? 'held'
            : next[n.name]
              ? `next after ${next[n.name]?.after}`
              : n.state && SLOT_PHASES.has(n.state)
                ? 'held?'
                : '-',
          age(n.stateSince, now),
          n.ready ? 'Ready' : 'NotReady',
          n.unschedulable ? (n.cordonedByNuo ? 'cordoned by nuo' : 'cordoned') : 'yes',
          poolOf.get(n.name) ?? (state.plan.conflicts.has(n.name) ? 'conflict' : 'none'),
          lifecycleColumn(state.conditions.get(n.name)),
          statusReason(n, now),
        ]);
      }
      out(table(rows));
      return 0;
    } catch (e) {
      err(explainApiError(e, kc));
      return 1;
    }
  },
};

function nodeAnnotationCommand(
  name: string,
  summary: string,
  explain: string,
  annotations: () => Record<string, string | null>,
  done: (node: string) => string,
): Command {
  return {
    name,
    summary,
    usage: nodeCommandUsage(name, explain),
    async run(argv) {
      const { node, kc } = nodeCommandArgs(argv);
      try {
        await kc
          .makeApiClient(CoreV1Api)
          .patchNode({ name: node, body: { metadata: { annotations: annotations() } } }, mergePatch);
        out(done(node));
        return 0;
      } catch (e) {
        err(
          statusCode(e) === 404
            ? `Error from server (NotFound): nodes "${node}" not found`
            : explainApiError(e, kc),
        );
        return 1;
      }
    },
  };
}

export const rebootCommand = nodeAnnotationCommand(
  'reboot',
  'reboot a node once through the normal budgeted rollout',
  `Sets ${Annotations.rebootRequested} to now: the operator reboots the node once, within the budget, as if a reboot were needed.`,
  () => ({ [Annotations.rebootRequested]: new Date().toISOString() }),
  (n) => `node/${n} reboot requested`,
);

export const pauseCommand = nodeAnnotationCommand(
  'pause',
  'leave a node alone (no new attempt; an attempt in flight holds its slot)',
  `Sets ${Annotations.paused}=true.`,
  () => ({ [Annotations.paused]: 'true' }),
  (n) => `node/${n} paused`,
);

export const resumeCommand = nodeAnnotationCommand(
  'resume',
  'let nuo manage a paused node again',
  `Removes ${Annotations.paused}.`,
  () => ({ [Annotations.paused]: null }),
  (n) => `node/${n} resumed`,
);
