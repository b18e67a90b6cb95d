/**
 * The checker's rules for a policy's gates must themselves be able to fail: each is broken here on
 * purpose, by direct writes to a real API server (a node put in an attempt as a careless operator
 * would), and the checker must name it, and must not name the same write made where the rule allows it.
 */
import assert from 'node:assert/strict';
import { after, beforeEach, describe, test } from 'node:test';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../../src/api/crd.ts';
import { Annotations, PolicyAnnotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import { CHAOS_NAMESPACE } from '../../src/sim/chaos-faults.ts';
import { GATES_POLICY, prepareGates } from '../../src/sim/chaos-gates.ts';
import { RACE_MS, SafetyChecker, type Violation } from '../../src/sim/checker.ts';
import type { GateSettings } from '../../src/sim/checker-gates.ts';
import { HOUR_MS } from '../../src/sim/checker-gates-rules.ts';
import { clearNodeProblem, setNodeProblem } from '../../src/sim/node-problem.ts';
import { applyPolicy } from '../../src/sim/policies.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 3 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
await core.createNamespace({ body: { metadata: { name: CHAOS_NAMESPACE } } });
await prepareGates(cluster);
const NODES = ['node-0', 'node-1', 'node-2'];
const WIDGET = { group: 'chaos.nuo.dev', version: 'v1', plural: 'widgets', namespace: CHAOS_NAMESPACE };
const POLICY = { group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural, name: GATES_POLICY };
const STALE_MS = 1500;

const SETTINGS: GateSettings = {
  policy: GATES_POLICY,
  object: {
    ...WIDGET,
    name: 'health',
    healthy: (o) => (o as { status?: { health?: string } }).status?.health === 'HEALTH_OK',
  },
  staleMs: STALE_MS,
  asks: { remediation: { types: ['KernelDeadlock'], forMs: 300_000 }, maxUptimeMs: HOUR_MS },
  reasonBudgets: [{ name: 'fixes', max: 1, reasons: ['Remediation', 'Refresh'] }],
  remediationsPerHour: 1,
};

let checker: SafetyChecker | undefined;
after(() => checker?.stop());

const setHealth = (health: string) =>
  custom
    .createNamespacedCustomObject({
      ...WIDGET,
      body: {
        apiVersion: 'chaos.nuo.dev/v1',
        kind: 'Widget',
        metadata: { name: 'health' },
        status: { health },
      },
    })
    .catch(() =>
      custom.patchNamespacedCustomObject(
        { ...WIDGET, name: 'health', body: { status: { health } } },
        mergePatch,
      ),
    );

const setHalted = (halted: boolean) =>
  custom.patchClusterCustomObjectStatus(
    {
      ...POLICY,
      body: {
        status: {
          conditions: [
            {
              type: 'Halted',
              status: halted ? 'True' : 'False',
              reason: halted ? 'FailureBudgetSpent' : 'NotHalted',
              message: 'written by the test',
              lastTransitionTime: new Date().toISOString(),
            },
          ],
        },
      },
    },
    mergePatch,
  );

/** Puts `name` in an attempt (Draining) or out of one (Idle), with `extra` annotations. */
const phase = (name: string, p: string, extra: Record<string, string | null> = {}) =>
  core.patchNode(
    { name, body: { metadata: { annotations: { [Annotations.state]: p, ...extra } } } },
    mergePatch,
  );

/** Every node Idle without a boot time or condition, the Widget healthy, the policy not halted; a fresh checker. */
beforeEach(async () => {
  await checker?.stop();
  await applyPolicy(cluster, GATES_POLICY, {});
  await setHalted(false);
  await setHealth('HEALTH_OK');
  for (const name of NODES) {
    await phase(name, Phase.idle, { [Annotations.bootTime]: new Date().toISOString() });
    await clearNodeProblem(core, name, 'KernelDeadlock');
  }
  checker = new SafetyChecker(cluster.kubeconfig, 3, { gates: SETTINGS });
  await checker.start();
});

/** The checker's violations of `rule` once the run is judged. */
async function judged(c: SafetyChecker, rule: Violation['rule']): Promise<string[]> {
  await c.finalCheck(NODES);
  await c.settle();
  return c.violations.filter((v) => v.rule === rule).map((v) => v.detail);
}

/** Waits until the checker's watch has seen `name` in phase `p` (so the next write comes after it). */
const seen = (c: SafetyChecker, name: string, inAttempt: boolean) =>
  pollUntil(`the checker to see ${name} ${inAttempt ? 'in' : 'out of'} an attempt`, async () =>
    c.disrupted().includes(name) === inAttempt ? true : undefined,
  );

describe('the gates rules fail when broken', () => {
  test('halted: an admission written after Halted turned True and before the resume; not one before, nor one after the resume', async () => {
    const c = checker as SafetyChecker;
    await phase('node-0', Phase.draining);
    await seen(c, 'node-0', true);
    await setHalted(true);
    await pollUntil('the checker to see the halt', async () =>
      c.gates?.seen.halts === 1 ? true : undefined,
    );
    await phase('node-1', Phase.draining);
    await seen(c, 'node-1', true);
    await custom.patchClusterCustomObject(
      {
        ...POLICY,
        body: { metadata: { annotations: { [PolicyAnnotations.resumedAt]: new Date().toISOString() } } },
      },
      mergePatch,
    );
    // Still True: the operator has not read the resume yet; the resume ended the halt all the same.
    await setHalted(true);
    await phase('node-2', Phase.draining);
    await seen(c, 'node-2', true);
    const found = await judged(c, 'halted');
    assert.equal(found.length, 1, found.join('\n'));
    assert.match(
      found[0] ?? '',
      /^node-1 admitted at revision \d+: policy chaos-gates Halted since revision \d+, not resumed$/,
    );
  });

  test("health-check: an admission, and a finished node's slot freed, while the resource had been unhealthy past staleMs; not one within it, nor after it is healthy", async () => {
    const c = checker as SafetyChecker;
    await phase('node-0', Phase.afterReboot);
    await seen(c, 'node-0', true);
    await setHealth('HEALTH_WARN');
    // Within staleMs of turning unhealthy: a reading the operator took just before may still admit.
    await phase('node-1', Phase.draining);
    await seen(c, 'node-1', true);
    await new Promise((resolve) => setTimeout(resolve, STALE_MS + 1500));
    await phase('node-2', Phase.draining);
    await seen(c, 'node-2', true);
    await phase('node-0', Phase.idle);
    await seen(c, 'node-0', false);
    await setHealth('HEALTH_OK');
    await phase('node-1', Phase.idle);
    await phase('node-1', Phase.draining);
    await seen(c, 'node-1', true);
    const found = await judged(c, 'health-check');
    assert.equal(found.length, 2, found.join('\n'));
    assert.match(
      found[0] ?? '',
      /^node-2 admitted at revision \d+: widgets chaos\/health unhealthy since revision/,
    );
    assert.match(found[1] ?? '', /^node-0's slot freed from its health gate at revision \d+/);
  });

  test('reason-budget and remediation-rate: a refresh started beside another attempt past a budget of 1; a second remediation within the hour', async () => {
    const c = checker as SafetyChecker;
    const old = new Date(Date.now() - 2 * HOUR_MS).toISOString();
    await phase('node-0', Phase.draining, { [Annotations.rebootNeeded]: 'true' });
    await seen(c, 'node-0', true);
    // An attempt admitted in the same pass is not held against it (settledDisruptions): this one is older.
    await new Promise((resolve) => setTimeout(resolve, RACE_MS + 500));
    await phase('node-1', Phase.draining, { [Annotations.bootTime]: old });
    await seen(c, 'node-1', true);
    assert.match(
      (await judged(c, 'reason-budget'))[0] ?? '',
      /^node-1's attempt for Refresh started with 2 nodes disrupted \(budget fixes: 1\): node-0, node-1$/,
    );
    for (const name of ['node-0', 'node-1'])
      await phase(name, Phase.idle, {
        [Annotations.rebootNeeded]: null,
        [Annotations.bootTime]: new Date().toISOString(),
      });
    for (const name of ['node-1', 'node-2']) {
      await setNodeProblem(core, name, { type: 'KernelDeadlock', since: new Date(Date.now() - 600_000) });
      await seen(c, name, false);
      await phase(name, Phase.draining);
      await seen(c, name, true);
      await phase(name, Phase.idle);
      await seen(c, name, false);
    }
    const rate = c.violations.filter((v) => v.rule === 'remediation-rate').map((v) => v.detail);
    assert.deepEqual(rate, [], 'judged at the end');
    assert.deepEqual(await judged(c, 'remediation-rate'), [
      '2 remediations within an hour (maxPerHour 1): node-1, node-2',
    ]);
  });
});
