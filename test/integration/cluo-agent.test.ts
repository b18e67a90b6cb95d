/**
 * CLUO's protocol with a real agent: FLUO's update-agent built with CLUO's key prefix (its only change;
 * CLUO's own source cannot be had here) on every node of a pool whose policy says
 * `agentProtocol: container-linux-update-operator`, confined by the admission policy deploy/ ships for
 * CLUO's agent. nuo drains, grants with CLUO's reboot-ok, sees the reboot and frees the slot, one node at a
 * time, and the independent checker holds it to the budget.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../../src/api/crd.ts';
import { AgentProtocol, protocolKeys } from '../../src/api/keys.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { installPolicyCrd } from '../../src/sim/policies.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { FAST_LEASE, rebootedOnce, useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 3, zones: 1 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
const NODES = ['node-0', 'node-1', 'node-2'];
const CLUO = protocolKeys(AgentProtocol.containerLinux);
const FLUO_PREFIX = protocolKeys(AgentProtocol.flatcar).id.replace(/id$/, '');
const policyFile = fileURLToPath(new URL('../../deploy/base/protocol-agent-policy.yaml', import.meta.url));

let fleet: Fleet | undefined;

before(async () => {
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
  await installPolicyCrd(cluster);
  const r = spawnSync(
    cluster.binaries.path.kubectl,
    [`--kubeconfig=${cluster.kubeconfigPath}`, 'apply', '-f', policyFile],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, `kubectl apply -f ${policyFile}: ${r.stderr}`);
  await custom.createClusterCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    plural: UPDATE_POLICY.plural,
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: UPDATE_POLICY.kind,
      metadata: { name: 'cluo' },
      spec: { agentProtocol: AgentProtocol.containerLinux, reboot: { soak: '1s' } },
    },
  });
});

describe("CLUO's protocol", () => {
  // Inside the suite: its after() runs before the file's, which stops the cluster the agents write to.
  after(() => fleet?.stop());

  test("a pool of CLUO's agents (FLUO's, under CLUO's prefix) rolls one node at a time in CLUO's keys", async () => {
    fleet = new Fleet(cluster, {
      rebootMs: 500,
      budget: [{ name: 'cluo', selects: () => true, max: 1, protocol: AgentProtocol.containerLinux }],
      fluoNodes: NODES,
      fluoPrefix: 'coreos',
    });
    await fleet.start();
    fleet.startOperator('op', [...FAST_LEASE, '--blocker-interval=1s']);
    // The agents announce themselves in CLUO's keys (their os-release's ID) before anything is staged.
    await pollUntil("every agent's id label under CLUO's prefix", async () => {
      const nodes = (await core.listNode()).items;
      return nodes.every((n) => n.metadata?.labels?.[CLUO.id] === 'flatcar') ? true : undefined;
    });
    fleet.stageUpdates(NODES);
    await rebootedOnce(core, fleet, NODES);
    await fleet.checker.finalCheck();
    assert.deepEqual(fleet.checker.violations, [], 'the checker saw no violation');
    assert.equal(fleet.checker.maxDisrupted, 1, 'one node at a time');
    for (const name of NODES) {
      const n = await core.readNode({ name });
      const keys = { ...n.metadata?.labels, ...n.metadata?.annotations };
      assert.equal(keys[CLUO.rebootOk], undefined, `${name}: nuo withdrew CLUO's grant`);
      assert.equal(keys[CLUO.rebootNeeded], 'false', `${name}: the agent says no reboot is needed`);
      assert.equal(n.spec?.unschedulable, undefined, `${name}: uncordoned`);
      assert.deepEqual(
        Object.keys(keys).filter((k) => k.startsWith(FLUO_PREFIX)),
        [],
        `${name}: no key under FLUO's prefix`,
      );
    }
    assert.ok(
      NODES.every((n) => (fleet?.fluo?.nodes.get(n)?.logind.calls.length ?? 0) === 1),
      'each agent asked logind for one reboot',
    );
  });
});
