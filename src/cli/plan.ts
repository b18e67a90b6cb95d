/**
 * `nuo plan NAME`: a Plan's version, conditions and every node it selects — applied, applying, or why it
 * waits (as a pass decides now) — and the Plans section of `nuo status`.
 */
import { parseArgs } from 'node:util';
import { sucPlanLabel } from '../api/keys.ts';
import { PlanConditions } from '../api/plan.ts';
import { planDoneLabel } from '../operator/decide/plan-work.ts';
import { appliedBy, optedOut } from '../operator/plans/plan-pass.ts';
import type { PlanEntry } from '../operator/plans/plan-resolve.ts';
import { type ClusterState, readClusterState } from './cluster-state.ts';
import { type Command, err, out, UsageError } from './command.ts';
import { explainApiError, kubeconfigFrom } from './kube.ts';
import { sucPlansNamespace } from './plans.ts';
import { table } from './table.ts';
import { stateFlags, stateUsage } from './usage.ts';

const condition = (e: PlanEntry, type: string) => e.plan.status?.conditions?.find((c) => c.type === type);

/** One line per Plan for `nuo status`. */
export function planLines(state: ClusterState): string[] {
  if (state.plans.crdMissing) return [];
  if (state.plans.entries.length === 0) return ['plans: none'];
  const lines = ['plans:'];
  for (const e of state.plans.entries) {
    const s = e.plan.status;
    const valid = condition(e, PlanConditions.validated);
    const done = condition(e, PlanConditions.complete);
    const parts = [
      e.version ? `version ${e.version}` : 'no version yet',
      // nuo's own check first: a Plan invalid since its last status says so at once.
      e.errors.length > 0
        ? `invalid: ${e.errors.map((x) => `${x.field}: ${x.message}`).join('; ')}`
        : valid?.status === 'False'
          ? `invalid: ${valid.message}`
          : '',
      s?.applying?.length ? `applying on ${s.applying.join(', ')}` : '',
      done ? `${done.status === 'True' ? 'complete' : done.reason}: ${done.message}` : 'no status yet',
    ];
    lines.push(`  ${e.ref}: ${parts.filter(Boolean).join('; ')}`);
  }
  return lines;
}

/** Each node the Plan selects: whether it is applied, and what it does or waits for now. */
export function planNodeRows(state: ClusterState, ref: string): string[][] {
  const p = state.passPlans.find((x) => x.ref === ref);
  if (!p) return [];
  const managed = new Set(state.plan.pools.flatMap((pool) => pool.nodes.map((n) => n.name)));
  const pending = new Map<string, string>();
  for (const d of state.decisions.values())
    for (const a of d.actions)
      if ((a.type === 'pending' || a.type === 'explain') && !pending.has(a.node))
        pending.set(a.node, a.reason);
  const rows = [['NODE', 'APPLIED', 'PHASE', 'WHY']];
  for (const n of state.nodes) {
    if (!p.ready || !p.selects(n.labels)) continue;
    const label = n.labels[planDoneLabel(p.ref)];
    const out = optedOut(n.labels, p.name);
    const by = appliedBy(n.labels, p);
    const applied = out ? 'disabled' : by ? 'yes' : label ? 'older hash' : 'no';
    const slot = state.ledger.slots[n.name];
    const why =
      by === 'suc'
        ? `applied by system-upgrade-controller (label ${sucPlanLabel(p.name)} = SUC's hash of this Plan)`
        : by === 'nuo'
          ? '-'
          : out
            ? `opted out (label ${out}): not touched`
            : !managed.has(n.name)
              ? "in no UpdatePolicy's pool: nuo leaves it alone"
              : slot?.plan?.ref === ref
                ? (n.stateReason ?? 'applying')
                : slot
                  ? `in an attempt of ${slot.plan ? `Plan ${slot.plan.ref}` : 'a reboot'}`
                  : n.work && n.work.ref !== ref
                    ? `Plan ${n.work.ref} comes first`
                    : (pending.get(n.name) ?? n.stateReason ?? 'waiting for the next pass');
    rows.push([n.name, applied, n.state ?? 'Idle', why]);
  }
  return rows;
}

export const planCommand: Command = {
  name: 'plan',
  summary: "a Plan's version, conditions and nodes: applied, applying, or why each waits",
  usage: stateUsage(
    [
      'Usage: nuo plan NAME [flags]',
      '',
      'Flags:',
      "  -n, --plan-namespace NS   the Plan's namespace (default: the only Plan of that name)",
    ],
    28,
  ),
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      options: { 'plan-namespace': { type: 'string', short: 'n' }, ...stateFlags },
    });
    const [name, extra] = positionals;
    if (!name) throw new UsageError('missing the Plan: nuo plan NAME');
    if (extra) throw new UsageError(`unexpected argument "${extra}"`);
    const kc = kubeconfigFrom(values);
    try {
      const state = await readClusterState(kc, values.namespace, new Date(), sucPlansNamespace(values));
      if (state.plans.crdMissing) {
        err('the Plan CRD is not installed (kubectl apply -k deploy)');
        return 1;
      }
      const ns = values['plan-namespace'];
      const found = state.plans.entries.filter((e) => e.name === name && (!ns || e.namespace === ns));
      const e = found[0];
      if (!e || found.length > 1) {
        err(
          e
            ? `Plan "${name}" is in several namespaces or groups (${found.map((f) => f.ref).join(', ')}): give its namespace with -n`
            : `Plan "${name}" not found${ns ? ` in namespace ${ns}` : ''}`,
        );
        return 1;
      }
      const suc = e.sucHash ? `, SUC's hash ${e.sucHash}` : '';
      out(`${e.ref}: version ${e.version ?? '(not resolved)'}, hash ${e.hash ?? '(none)'}${suc}`);
      for (const c of e.plan.status?.conditions ?? [])
        out(`  ${c.type}=${c.status} (${c.reason}): ${c.message}`);
      for (const f of e.plan.status?.failed ?? []) out(`  failed on ${f.node} at ${f.at}: ${f.error}`);
      out('');
      const rows = planNodeRows(state, e.ref);
      out(rows.length > 1 ? table(rows) : 'no node selected (or the Plan is not ready)');
      return 0;
    } catch (e) {
      if (e instanceof UsageError) throw e;
      err(explainApiError(e, kc));
      return 1;
    }
  },
};
