/**
 * A mixed cluster rolled out by nuo on the real control plane: one pool whose nodes run FLUO's real
 * update-agent (built from its pinned source, fluo-agent.ts) under `agentProtocol: flatcar-update-operator`,
 * another of nuo's own agents with one node still on kured 1.23.0 (coexistence.kured, holdLock), every
 * pool under its budget and the two together under one, as the independent checker sees them. The real
 * agent's cordon contract is checked as it runs: nuo cordons and drains before it grants, so the agent
 * finds its node unschedulable and empty, writes no agent-made-unschedulable (it writes that only for a
 * cordon of its own), and leaves the uncordon to nuo.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CoreV1Api, CustomObjectsApi, type V1Node } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../../src/api/crd.ts';
import { AgentProtocol, Annotations, protocolKeys } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { UpdatePolicySpec } from '../../src/api/update-policy.ts';
import { ResilientInformer } from '../../src/kube/informer.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import type { Budget } from '../../src/sim/checker.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { FIRST_FLATCAR_VERSION, nextVersion } from '../../src/sim/fluo-os.ts';
import { KURED_ACCOUNT } from '../../src/sim/kured-agent.ts';
import { installPolicyCrd } from '../../src/sim/policies.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { FAST_LEASE, useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 5 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
const FLUO = AgentProtocol.flatcar;
const K = protocolKeys(FLUO);
const FLUO_NODES = ['node-0', 'node-1'];
const NUO_NODES = ['node-2', 'node-3'];
const KURED_NODE = 'node-4';
const ref = { group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural };

/** The policies' budgets, one each, and the two together: never more disrupted than both allow. */
const budgets: Budget[] = [
  { name: 'pool fluo', selects: (l) => l.pool === 'fluo', max: 1, protocol: FLUO },
  { name: 'pool nuo (kured beside)', selects: (l) => l.pool === 'nuo', max: 1 },
  { name: 'both pools', selects: (l) => l.pool === 'fluo' || l.pool === 'nuo', max: 2 },
];

async function createPolicy(name: string, spec: UpdatePolicySpec): Promise<void> {
  await custom.createClusterCustomObject({
    ...ref,
    body: { apiVersion: `${API_GROUP}/${API_VERSION}`, kind: UPDATE_POLICY.kind, metadata: { name }, spec },
  });
}

/** Per FLUO node, the cordon as the watch saw it when nuo's grant (FLUO's reboot-ok) first appeared. */
const cordonedAtGrant = new Map<string, boolean[]>();
let grants: ResilientInformer<V1Node> | undefined;
let fleet: Fleet | undefined;

before(async () => {
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
  await installPolicyCrd(cluster);
  for (const [names, pool] of [
    [FLUO_NODES, 'fluo'],
    [[...NUO_NODES, KURED_NODE], 'nuo'],
  ] as const)
    for (const name of names)
      await core.patchNode({ name, body: { metadata: { labels: { pool } } } }, mergePatch);
  grants = new ResilientInformer<V1Node>({
    kubeconfig: cluster.kubeconfig,
    path: '/api/v1/nodes',
    list: (opts) => core.listNode(opts),
    name: 'grants',
  });
  const granted = new Set<string>();
  grants.onEvent((type, n) => {
    const name = n.metadata?.name ?? '';
    if (type === 'delete' || !FLUO_NODES.includes(name)) return;
    const ok = n.metadata?.annotations?.[K.rebootOk] === 'true';
    if (ok && !granted.has(name))
      cordonedAtGrant.set(name, [...(cordonedAtGrant.get(name) ?? []), n.spec?.unschedulable === true]);
    if (ok) granted.add(name);
    else granted.delete(name);
  });
  await grants.start();
});

after(async () => {
  await grants?.stop();
  await fleet?.stop();
});

describe("a mixed rollout: FLUO's real update-agent, nuo's agents and kured under one budget", () => {
  test('every pool finishes, each node rebooted once, no violation, never more disrupted than the budgets', async (t) => {
    const started = Date.now();
    const f = new Fleet(cluster, {
      rebootMs: 500,
      budget: budgets,
      agentCheckIntervalMs: 2000,
      fluoNodes: FLUO_NODES,
      kuredNodes: [KURED_NODE],
      kured: { periodSeconds: 2 },
    });
    fleet = f;
    await f.start();
    const quick = { soak: '1s', retryBackoff: '5s' };
    await createPolicy('fluo', {
      nodeSelector: { matchLabels: { pool: 'fluo' } },
      agentProtocol: FLUO,
      maxUnavailable: 1,
      reboot: quick,
    });
    await createPolicy('nuo', {
      nodeSelector: { matchLabels: { pool: 'nuo' } },
      maxUnavailable: 1,
      reboot: quick,
      coexistence: {
        kured: {
          daemonSet: { namespace: KURED_ACCOUNT.namespace, name: KURED_ACCOUNT.name },
          holdLock: true,
          lockTTL: '1m',
        },
      },
    });
    f.startOperator('op-a', FAST_LEASE);
    f.stageUpdates();

    await pollUntil(
      'every node rebooted once, by nuo or by kured, and back to Idle',
      async () => {
        const nodes = (await core.listNode()).items;
        const done = nodes.every((n) => {
          const name = n.metadata?.name ?? '';
          if (name === KURED_NODE) return f.checker.kuredRebootsOf(name) === 1 && !n.spec?.unschedulable;
          return (
            f.checker.rebootsOf(name) === 1 &&
            n.metadata?.annotations?.[Annotations.state] === Phase.idle &&
            !n.spec?.unschedulable
          );
        });
        return done ? true : undefined;
      },
      { timeoutMs: 300_000, intervalMs: 500 },
    );
    await f.checker.finalCheck();
    await f.checker.settle();
    assert.deepEqual(f.checker.violations, [], 'the checker saw no violation');
    assert.ok(f.checker.maxDisrupted <= 2, `at most both budgets disrupted (saw ${f.checker.maxDisrupted})`);
    for (const name of FLUO_NODES) {
      const agent = f.fluo?.nodes.get(name);
      assert.equal(agent?.logind.calls.length, 1, `${name}: FLUO's agent asked logind to reboot once`);
      const n = await core.readNode({ name });
      assert.equal(
        n.metadata?.labels?.[K.version],
        nextVersion(FIRST_FLATCAR_VERSION),
        `${name}: runs the staged version`,
      );
      assert.equal(n.metadata?.annotations?.[K.rebootNeeded], 'false', name);
    }
    assert.equal(f.kured?.nodes.get(KURED_NODE)?.reboots, 1, 'kured rebooted its node once');
    t.diagnostic(`mixed rollout: ${Math.round((Date.now() - started) / 1000)} s`);
  });

  test("FLUO's agent finds nuo's cordon and nothing to drain at the grant, claims no cordon, and nuo uncordons", async () => {
    for (const name of FLUO_NODES) {
      assert.deepEqual(cordonedAtGrant.get(name), [true], `${name}: one grant, made on a cordoned node`);
      const n = await core.readNode({ name });
      // FLUO's agent writes agent-made-unschedulable only when it cordons; absent, it leaves the uncordon alone.
      assert.equal(
        n.metadata?.annotations?.[K.agentMadeUnschedulable],
        undefined,
        `${name}: the agent did not claim the cordon`,
      );
      const output = fleet?.fluo?.nodes.get(name)?.output() ?? '';
      assert.match(output, /Node already marked as unschedulable/, `${name}: the agent found nuo's cordon`);
      assert.doesNotMatch(output, /Marking node as (un)?schedulable/, `${name}: the agent cordoned nothing`);
      assert.match(output, /Deleting\/Evicting 0 pods/, `${name}: nuo had drained it`);
      assert.notEqual(n.spec?.unschedulable, true, `${name}: nuo uncordoned it`);
      assert.equal(n.metadata?.annotations?.[K.rebootOk], undefined, `${name}: the grant cleared`);
      assert.equal(n.metadata?.annotations?.[K.rebootInProgress], 'false', name);
    }
  });
});
