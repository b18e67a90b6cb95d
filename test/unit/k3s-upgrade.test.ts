import assert from 'node:assert/strict';
import test from 'node:test';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { Plan } from '../../src/api/plan.ts';
import { envOf, kubeletVersionOf, prepareWaits } from '../../src/sim/k3s-upgrade.ts';

test('kubeletVersionOf: the version k3s reports once the tagged image installed it', () => {
  assert.equal(kubeletVersionOf('rancher/k3s-upgrade:v1.20.11-k3s1'), 'v1.20.11+k3s1');
  assert.equal(kubeletVersionOf('rancher/k3s-upgrade:v1.30.2-rc1-k3s1'), 'v1.30.2-rc1+k3s1');
  assert.equal(kubeletVersionOf('rancher/k3s-upgrade:v1.20.11'), 'v1.20.11');
  assert.equal(kubeletVersionOf('ubuntu:jammy'), undefined);
});

/** The pod of an agent's prepare Job: the prepare container alone. */
const agentPod = (version: string, extra: { name: string; value: string }[] = []): V1Pod => ({
  spec: {
    containers: [
      {
        name: 'prepare',
        args: ['prepare', 'k3s-server'],
        env: [{ name: 'SYSTEM_UPGRADE_PLAN_LATEST_VERSION', value: version }, ...extra],
      },
    ],
  },
});
const serverPlan = (applying: string[] = []): Plan =>
  ({ metadata: { name: 'k3s-server' }, status: { applying } }) as unknown as Plan;

test("prepareWaits: k3s-upgrade's prepare waits for its Plan to apply nowhere and every server at the munged version", () => {
  const at = (v: string, server: boolean, name = 'n') =>
    ({
      metadata: { name, labels: server ? { 'node-role.kubernetes.io/control-plane': 'true' } : {} },
      status: { nodeInfo: { kubeletVersion: v } },
    }) as V1Node;
  const upgraded = [
    at('v1.20.11+k3s1', true, 's0'),
    at('v1.20.11+k3s1', true, 's1'),
    at('v1.19.1+k3s1', false),
  ];
  const cases: [string, V1Pod, Plan | undefined, V1Node[], RegExp | undefined][] = [
    ['every server upgraded', agentPod('v1.20.11-k3s1'), serverPlan(), upgraded, undefined],
    ['given the version with "+"', agentPod('v1.20.11+k3s1'), serverPlan(), upgraded, /not v1.20.11\+k3s1/],
    [
      'a server not yet',
      agentPod('v1.20.11-k3s1'),
      serverPlan(),
      [upgraded[0] as V1Node, at('v1.19.1+k3s1', true)],
      /v1.19.1-k3s1, v1.20.11-k3s1/,
    ],
    ['its Plan still applying', agentPod('v1.20.11-k3s1'), serverPlan(['s1']), upgraded, /applies on s1/],
    ['its Plan missing', agentPod('v1.20.11-k3s1'), undefined, upgraded, /does not exist/],
  ];
  for (const [what, pod, plan, nodes, want] of cases) {
    const waits = prepareWaits(pod, plan, nodes);
    if (want) assert.match(waits ?? '', want, what);
    else assert.equal(waits, undefined, what);
  }
  assert.equal(
    prepareWaits({ spec: { containers: [{ name: 'upgrade' }] } }, undefined, []),
    undefined,
    'no prepare',
  );
  const init = {
    spec: { initContainers: agentPod('v1').spec?.containers, containers: [{ name: 'upgrade' }] },
  };
  assert.match(prepareWaits(init, undefined, []) ?? '', /does not exist/, 'SUC’s init container too');
});

test('envOf: the last variable of a name is the one the container sees', () => {
  const pod = agentPod('v1', [{ name: 'SYSTEM_UPGRADE_PLAN_LATEST_VERSION', value: 'v2' }]);
  assert.equal(envOf(pod, 'prepare', 'SYSTEM_UPGRADE_PLAN_LATEST_VERSION'), 'v2');
  assert.equal(envOf(pod, 'upgrade', 'SYSTEM_UPGRADE_PLAN_LATEST_VERSION'), undefined);
});
