/** Prometheus metrics of the operator (prom-client), served on /metrics by `nuo operator`. */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { PHASES } from '../api/phases.ts';
import type { BuildInfo } from '../util/build-info.ts';
import type { NodeView } from './decide/node-view.ts';

/** What the budget gauges read of a pass's decisions (a PassDecision), named here so that no import circles back. */
interface PassBudgets {
  pools: ReadonlyArray<{ pool: { name: string }; decision: { budget: { slots: number; used: number } } }>;
}

export class OperatorMetrics {
  readonly registry = new Registry();

  constructor(build: BuildInfo) {
    // The process's own figures (resident memory, CPU seconds, heap, event-loop lag): what an operator of
    // the operator alerts on, and what bench/footprint.ts reads.
    collectDefaultMetrics({ register: this.registry });
    // Constant 1, labelled: joined onto other series, it tells which build each replica runs.
    new Gauge({
      name: 'nuo_build_info',
      help: 'the build this operator runs: nuo version, git revision, Node version (always 1)',
      labelNames: ['version', 'revision', 'node'],
      registers: [this.registry],
    }).set({ version: build.version, revision: build.revision, node: build.node }, 1);
  }

  readonly leader = new Gauge({
    name: 'nuo_leader',
    help: '1 while this replica leads',
    registers: [this.registry],
  });
  readonly admissions = new Counter({
    name: 'nuo_admissions_total',
    help: 'nodes admitted to a slot',
    registers: [this.registry],
  });
  readonly completions = new Counter({
    name: 'nuo_reboots_completed_total',
    help: 'reboots completed',
    registers: [this.registry],
  });
  readonly agentProblems = new Gauge({
    name: 'nuo_agent_problems',
    help: 'nodes whose agent reports a problem it cannot fix itself (nuo.dev/agent-problem)',
    registers: [this.registry],
  });
  readonly grantsRevoked = new Counter({
    name: 'nuo_grants_revoked_total',
    help: 'nuo.dev/reboot-ok values removed because nuo did not give them',
    registers: [this.registry],
  });
  readonly writesRefused = new Counter({
    name: 'nuo_writes_refused_total',
    help: 'node writes the API server refused as invalid (4xx other than conflicts), each retried with backoff',
    registers: [this.registry],
  });
  readonly notifications = new Counter({
    name: 'nuo_notifications_total',
    help: 'notifications by outcome: sent, failed (after every retry), dropped (a full queue)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly failures = new Counter({
    name: 'nuo_failures_total',
    help: 'failed or aborted attempts',
    registers: [this.registry],
  });
  readonly conflicts = new Counter({
    name: 'nuo_conflicts_total',
    help: '409 conflicts (re-read and re-decide)',
    registers: [this.registry],
  });
  readonly evictions = new Counter({
    name: 'nuo_evictions_total',
    help: 'pods evicted by drains',
    registers: [this.registry],
  });
  readonly policyStatusWrites = new Counter({
    name: 'nuo_policy_status_writes_total',
    help: 'UpdatePolicy status writes (only when a status changed)',
    registers: [this.registry],
  });
  readonly nodeConditionWrites = new Counter({
    name: 'nuo_node_condition_writes_total',
    help: "writes of nodes' lifecycle conditions (KEP-5683; only when they changed)",
    registers: [this.registry],
  });
  readonly evictionsRefused = new Counter({
    name: 'nuo_evictions_refused_total',
    help: 'evictions a PodDisruptionBudget refused (429), each retried',
    registers: [this.registry],
  });
  readonly drainSeconds = new Histogram({
    name: 'nuo_drain_duration_seconds',
    help: 'drain duration by outcome',
    labelNames: ['outcome'],
    buckets: [1, 5, 15, 30, 60, 120, 300, 600],
    registers: [this.registry],
  });
  readonly reconcileSeconds = new Histogram({
    name: 'nuo_reconcile_duration_seconds',
    help: 'one reconcile pass',
    buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
    registers: [this.registry],
  });
  readonly slots = new Gauge({
    name: 'nuo_budget_slots',
    help: 'slots allowed by maxUnavailable, per pool (its UpdatePolicy; "(none)" for attempts no policy holds)',
    labelNames: ['pool'],
    registers: [this.registry],
  });
  readonly used = new Gauge({
    name: 'nuo_budget_used',
    help: 'slots in use (holders, NotReady, cordoned by others), per pool',
    labelNames: ['pool'],
    registers: [this.registry],
  });
  readonly phase = new Gauge({
    name: 'nuo_nodes',
    help: 'nodes by phase',
    labelNames: ['phase'],
    registers: [this.registry],
  });

  observe(decision: PassBudgets, nodes: NodeView[], ms: number): void {
    this.reconcileSeconds.observe(ms / 1000);
    this.slots.reset();
    this.used.reset();
    for (const { pool, decision: d } of decision.pools) {
      const labels = { pool: pool.name || '(none)' };
      this.slots.set(labels, d.budget.slots);
      this.used.set(labels, d.budget.used);
    }
    const counts = new Map<string, number>();
    for (const n of nodes) counts.set(n.state ?? 'Idle', (counts.get(n.state ?? 'Idle') ?? 0) + 1);
    // Every phase, 0 included: an alert or a panel on a phase no node is in reads 0, not nothing.
    for (const phase of PHASES) this.phase.set({ phase }, counts.get(phase) ?? 0);
  }
}
