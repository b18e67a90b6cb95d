/**
 * nuo's metrics as they are meant to be used: a real Prometheus (Debian's package) scrapes a real
 * operator through a rollout and evaluates the chart's alerting rules; every query of the Grafana
 * dashboard (deploy/grafana/nuo.json) returns data, every alert expression evaluates, and
 * NuoRolloutStuck fires while a drain is blocked by a PodDisruptionBudget.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { AppsV1Api, CoreV1Api, PolicyV1Api } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { freePort } from '../../src/sim/cluster/net.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { undrainablePod } from '../../src/sim/workload.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { CHART_DIR } from '../../tools/helm/run.ts';
import { useHelm } from './helm.ts';
import { startPrometheusFor } from './prometheus-server.ts';
import { operatorUnder, useCluster } from './support.ts';

const DASHBOARD = new URL('../../deploy/grafana/nuo.json', import.meta.url);
const cluster = await useCluster({ nodes: 3 });
const helm = await useHelm();
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const _apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
const _pdbs = cluster.kubeconfig.makeApiClient(PolicyV1Api);

interface Rule {
  alert: string;
  expr: string;
}

/** The chart's PrometheusRule, rendered with a short stuck-rollout window, as a Prometheus rules file. */
function chartRules(): { text: string; rules: Rule[] } {
  const r = helm(
    'template',
    'nuo',
    CHART_DIR,
    '--set',
    'metrics.prometheusRule.enabled=true',
    '--set',
    'metrics.prometheusRule.rolloutStuckAfter=20s',
    '--show-only',
    'templates/prometheus-rule.yaml',
  );
  assert.equal(r.status, 0, r.stderr);
  const groups = (parse(r.stdout) as { spec: { groups: { rules: Rule[] }[] } }).spec.groups;
  return { text: stringify({ groups }), rules: groups.flatMap((g) => g.rules) };
}

/** Every query of the dashboard, its Grafana variables given values a person would pick. */
function dashboardQueries(): { panel: string; expr: string }[] {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    panels: { title: string; targets: { expr: string }[] }[];
  };
  return dashboard.panels.flatMap((p) =>
    p.targets.map((t) => ({
      panel: p.title,
      expr: t.expr
        .replaceAll('$__rate_interval', '1m')
        .replaceAll('$__range', '10m')
        .replaceAll('$pool', '.*'),
    })),
  );
}

async function query(url: string, expr: string): Promise<{ status: string; data: { result: unknown[] } }> {
  const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
  return (await res.json()) as { status: string; data: { result: unknown[] } };
}

const state = async (name: string) =>
  (await core.readNode({ name })).metadata?.annotations?.[Annotations.state];

const stop = new AbortController();
let fleet: Fleet | undefined;
after(async () => {
  stop.abort();
  await fleet?.stop();
});

test('Prometheus scrapes the operator through a rollout: dashboard queries return data, alerts evaluate, a blocked drain fires NuoRolloutStuck', async () => {
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
  const { text, rules } = chartRules();
  assert.deepEqual(
    rules.map((r) => r.alert).sort(),
    ['NuoDrainBlocked', 'NuoNoLeader', 'NuoNodeFailed', 'NuoRolloutStuck'],
    "the issue's four alerts",
  );
  const port = await freePort();
  fleet = new Fleet(cluster, { rebootMs: 300, budget: 1, agentCheckIntervalMs: 2000 });
  await fleet.start();
  await operatorUnder(fleet, 'op-a', { maxUnavailable: 1, drain: { timeout: '10m' } }, [
    `--metrics-port=${port}`,
  ]);
  const prometheus = await startPrometheusFor([`127.0.0.1:${port}`], text, stop.signal);
  after(() => prometheus.stop());

  // One node through a whole attempt: admissions, a drain, a completion to count.
  fleet.stageUpdates(['node-0']);
  await pollUntil(
    'node-0 rebooted and Idle',
    async () =>
      fleet?.checker.rebootsOf('node-0') === 1 && (await state('node-0')) === Phase.idle ? true : undefined,
    { timeoutMs: 60_000 },
  );

  // Then a drain no PodDisruptionBudget lets finish: a pod pinned to node-1 that may never be evicted.
  await undrainablePod(cluster.kubeconfig, 'stuck', 'node-1');
  fleet.stageUpdates(['node-1']);
  await pollUntil('node-1 draining', async () =>
    (await state('node-1')) === Phase.draining ? true : undefined,
  );

  const firing = await pollUntil(
    'NuoRolloutStuck firing',
    async () => {
      const res = await fetch(`${prometheus.url}/api/v1/alerts`);
      const alerts = (
        (await res.json()) as { data: { alerts: { labels: { alertname: string }; state: string }[] } }
      ).data.alerts;
      return alerts.find((a) => a.labels.alertname === 'NuoRolloutStuck' && a.state === 'firing');
    },
    { timeoutMs: 120_000, intervalMs: 1000 },
  );
  assert.ok(firing);

  for (const { panel, expr } of dashboardQueries()) {
    const answer = await query(prometheus.url, expr);
    assert.equal(answer.status, 'success', `${panel}: ${expr}`);
    assert.ok(answer.data.result.length > 0, `${panel} returns data: ${expr}`);
  }
  for (const rule of rules) {
    const answer = await query(prometheus.url, rule.expr);
    assert.equal(answer.status, 'success', `${rule.alert} evaluates: ${rule.expr}`);
  }
  const slotsByPool = await query(prometheus.url, 'nuo_budget_slots{pool="fleet"}');
  assert.equal(slotsByPool.data.result.length, 1, 'the pool variable has its value: the policy');
});
