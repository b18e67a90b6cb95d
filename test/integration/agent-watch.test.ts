/**
 * The agent's watch of its own Node on a real control plane, through a kube-apiserver restart. A restarted
 * API server's watch cache starts at the current resourceVersion; an idle Node's own resourceVersion is
 * older than that, so an agent that watched from it was answered 410 Gone, re-read the Node (same old
 * version), reset its backoff and watched again: ~4 requests/s per idle node, until the Node changed.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { CoreV1Api } from '@kubernetes/client-node';
import { NodeAgent } from '../../src/agent/agent.ts';
import { OperatorGrants } from '../../src/agent/grant-key.ts';
import { Need } from '../../src/agent/os.ts';
import {
  GRANT_KEY_NAME,
  GrantCheck,
  type GrantVerdict,
  generateGrantKey,
  PUBLIC_KEY_FIELD,
  signGrant,
} from '../../src/api/grant.ts';
import { Annotations, DEFAULT_NAMESPACE, LEDGER } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { kubeconfigCredentials } from '../../src/kube/kubeconfig-credentials.ts';
import { LeanClient, type LeanNode } from '../../src/kube/lean-client.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 2 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const NODE = 'node-0';
// The operator's grant key, published where agents read it (the operator does this when it leads).
const grantKey = generateGrantKey();
await core.createNamespace({ body: { metadata: { name: DEFAULT_NAMESPACE } } });
await core.createNamespacedConfigMap({
  namespace: DEFAULT_NAMESPACE,
  body: { metadata: { name: GRANT_KEY_NAME }, data: { [PUBLIC_KEY_FIELD]: grantKey.publicPem } },
});

/** A real LeanClient that records every request the agent makes through it. */
class CountingClient extends LeanClient {
  readonly requests: { at: number; what: string }[] = [];

  #note(what: string): void {
    this.requests.push({ at: Date.now(), what });
  }

  since(from: number): string[] {
    return this.requests.filter((r) => r.at >= from).map((r) => `+${r.at - from} ms ${r.what}`);
  }

  override getNode(name: string) {
    this.#note(`get ${name}`);
    return super.getNode(name);
  }

  override listNode(name: string) {
    this.#note(`list ${name}`);
    return super.listNode(name);
  }

  override patchNode(name: string, patch: object) {
    this.#note(`patch ${name}`);
    return super.patchNode(name, patch);
  }

  override watchNode(
    name: string,
    resourceVersion: string,
    onNode: (type: string, node: LeanNode) => void,
    signal: AbortSignal,
  ) {
    this.#note(`watch ${name} from ${resourceVersion}`);
    return super.watchNode(name, resourceVersion, onNode, signal);
  }
}

/** Runs the agent until the test ends, also when an assertion fails: a running agent would keep the process alive. */
function runUntilTheEnd(t: TestContext, agent: NodeAgent, client: LeanClient): void {
  const stop = new AbortController();
  const done = agent.run(stop.signal);
  t.after(async () => {
    stop.abort();
    await done;
    client.close();
  });
}

test('an idle agent survives a kube-apiserver restart with a few requests, and still sees its node', async (t) => {
  const client = new CountingClient(kubeconfigCredentials(cluster.kubeconfigPath));
  const reboots: number[] = [];
  const logs: string[] = [];
  const agent = new NodeAgent({
    nodeName: NODE,
    client,
    detector: { name: 'up-to-date', check: async () => ({ need: Need.notNeeded, reason: 'up to date' }) },
    rebooter: {
      name: 'recording',
      reboot: async () => {
        reboots.push(Date.now());
      },
    },
    bootId: { read: async () => 'boot-1' },
    grants: new OperatorGrants(client, DEFAULT_NAMESPACE),
    // Only the watch can bring the node's changes to the agent.
    checkIntervalMs: 3_600_000,
    log: (level, message) => logs.push(`${new Date().toISOString()} ${level} ${message}`),
  });
  runUntilTheEnd(t, agent, client);
  await pollUntil('the agent to watch its node', () =>
    client.requests.some((r) => r.what.startsWith('watch')) ? true : undefined,
  );
  const before = (await core.readNode({ name: NODE })).metadata?.resourceVersion;
  // A write elsewhere moves the cluster's resourceVersion past every version the agent has seen, so the
  // restarted API server's watch window starts after them (as it does in any cluster with other traffic).
  await core.createNamespacedConfigMap({
    namespace: 'default',
    body: { metadata: { name: 'elsewhere' }, data: { a: 'b' } },
  });

  const restartedFrom = Date.now();
  await cluster.restart('kube-apiserver');
  const from = Date.now();
  // The measurement is the agent's idleness over a window: there is no event to await here.
  await delay(10_000);
  const window = client.since(from);
  const report = `restart took ${from - restartedFrom} ms; node resourceVersion ${before}; requests since the restart began:\n${client.since(restartedFrom).join('\n')}\nagent log:\n${logs.join('\n')}`;
  t.diagnostic(`${window.length} requests in the 10 s after the restart; ${report}`);
  assert.ok(window.length <= 5, `at most a handful of requests in the 10 s after the restart; ${report}`);
  assert.ok(
    client.since(restartedFrom).some((r) => r.includes('watch')),
    `the agent watches again once the API server is back; ${report}`,
  );
  assert.ok(
    logs.some((l) => l.includes('410')),
    `the restarted API server refused the agent's last version (the case under test); ${report}`,
  );
  // An idle agent writes nothing (others, e.g. KWOK, may write the node meanwhile).
  assert.ok(!client.since(restartedFrom).some((r) => r.includes('patch')), `no writes; ${report}`);

  // A grant made after the restart reaches the agent through its watch: it marks the reboot and reboots.
  // As the operator gives it: the node's slot taken in the ledger, then the grant for that attempt.
  const attempt = new Date().toISOString();
  await core.createNamespacedConfigMap({
    namespace: DEFAULT_NAMESPACE,
    body: {
      metadata: { name: LEDGER.name },
      data: { [LEDGER.key]: JSON.stringify({ slots: { [NODE]: { since: attempt } } }) },
    },
  });
  await core.patchNode(
    {
      name: NODE,
      body: {
        metadata: {
          annotations: {
            [Annotations.rebootOk]: signGrant(grantKey.privateKey, {
              node: NODE,
              bootId: 'boot-1',
              attempt,
            }),
            [Annotations.state]: Phase.rebootGranted,
            [Annotations.stateSince]: new Date().toISOString(),
          },
        },
        // Drained, as the operator leaves a node it grants: the agent reboots only a cordoned node.
        spec: { unschedulable: true },
      },
    },
    mergePatch,
  );
  await pollUntil('the agent to reboot for the grant', () => (reboots.length > 0 ? true : undefined), {
    timeoutMs: 15_000,
  });
  const node = await core.readNode({ name: NODE });
  assert.equal(node.metadata?.annotations?.[Annotations.rebootInProgress], 'true', report);
  assert.equal(node.metadata?.annotations?.[Annotations.bootIdBefore], 'boot-1', report);
});

/** Whether a reboot is needed, as the test sets it; push() tells the agent, as a D-Bus signal would. */
interface Switch {
  need: Need;
  push: () => void;
}

/**
 * An agent on node-1 whose detector reports what `state` says, with a fixed report delay of
 * `spreadMs` × `share`. Only the detector's push brings a change: no poll (an hour apart) reports early.
 */
function switchAgent(client: LeanClient, state: Switch, spreadMs: number, share: number, logs: string[]) {
  return new NodeAgent({
    nodeName: 'node-1',
    client,
    detector: {
      name: 'switch',
      check: async () => ({ need: state.need, reason: `test: ${state.need}` }),
      watch: (onChange) => {
        state.push = onChange;
        return () => {};
      },
    },
    rebooter: { name: 'none', reboot: async () => {} },
    bootId: { read: async () => 'boot-1' },
    grants: new OperatorGrants(client, DEFAULT_NAMESPACE),
    checkIntervalMs: 3_600_000,
    reportSpreadMs: spreadMs,
    random: () => share,
    log: (level, message) => logs.push(`${Date.now()} ${level} ${message}`),
  });
}

test('a need not on the node yet is reported after its random delay within the spread; a shown one is not held back', async (t) => {
  const node = 'node-1';
  const client = new LeanClient(kubeconfigCredentials(cluster.kubeconfigPath));
  const state: Switch = { need: Need.notNeeded, push: () => {} };
  const start = (logs: string[]) => {
    const agent = switchAgent(client, state, 4000, 0.75, logs);
    const stop = new AbortController();
    const done = agent.run(stop.signal);
    const halt = async () => {
      stop.abort();
      await done;
    };
    stops.push(halt);
    return halt;
  };
  const stops: Array<() => Promise<void>> = [];
  // Also when an assertion fails: a running agent would keep the test process alive.
  t.after(async () => {
    for (const halt of stops) await halt();
    client.close();
  });
  const needOnNode = async () =>
    (await core.readNode({ name: node })).metadata?.annotations?.[Annotations.rebootNeeded];
  const logs: string[] = [];
  const stopFirst = start(logs);
  await pollUntil('the agent to read its node', () =>
    logs.some((l) => l.includes('agent running')) ? true : undefined,
  );

  state.need = Need.needed;
  state.push();
  const held = await pollUntil('the agent to hold the report back', () =>
    logs.find((l) => l.includes(`test: ${Need.needed}: reporting it in 3000 ms`)),
  );
  const heldAt = Number(held.split(' ')[0]);
  assert.equal(await needOnNode(), undefined, 'not written while held back');
  state.push(); // a second signal for the same need neither reports early nor draws another delay
  await pollUntil('the need on the node', async () => ((await needOnNode()) === 'true' ? true : undefined), {
    timeoutMs: 15_000,
  });
  assert.ok(Date.now() - heldAt >= 3000, 'written no earlier than its delay');
  assert.equal(logs.filter((l) => l.includes('reporting it in')).length, 1, logs.join('\n'));
  await stopFirst();

  // A fresh agent on a node that shows the need (its restart) holds nothing back.
  const again: string[] = [];
  const stopSecond = start(again);
  await pollUntil('the agent to read its node', () =>
    again.some((l) => l.includes('agent running')) ? true : undefined,
  );
  state.push();
  state.need = Need.notNeeded;
  state.push();
  await pollUntil(
    'the withdrawn need off the node',
    async () => ((await needOnNode()) === 'true' ? undefined : true),
    {
      timeoutMs: 15_000,
    },
  );
  assert.deepEqual(
    again.filter((l) => l.includes('reporting it in')),
    [],
    'neither a need already shown nor its withdrawal waits',
  );
  await stopSecond();
});

test('a held-back report is written when its timer fires, even while the wall clock lags behind it', async (t) => {
  // Timers run on a monotonic clock, Date.now() on the wall clock, so a timer can fire a moment before
  // Date.now() reaches the time it was set for. With the wall clock frozen it lags by the whole delay:
  // the report must still go out when its timer fires, not a check interval (here an hour) later.
  const client = new LeanClient(kubeconfigCredentials(cluster.kubeconfigPath));
  const state: Switch = { need: Need.notNeeded, push: () => {} };
  const logs: string[] = [];
  const agent = switchAgent(client, state, 2000, 0.5, logs);
  runUntilTheEnd(t, agent, client);
  const needOnNode = async () =>
    (await core.readNode({ name: 'node-1' })).metadata?.annotations?.[Annotations.rebootNeeded];
  await pollUntil('the agent to read its node', () =>
    logs.some((l) => l.includes('agent running')) ? true : undefined,
  );
  assert.equal(await needOnNode(), undefined, 'the node shows no need before the test');

  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  state.need = Need.needed;
  state.push();
  // pollUntil's deadline reads Date.now(), frozen here: the deadline is kept on the monotonic clock.
  const deadline = performance.now() + 10_000;
  while ((await needOnNode()) !== 'true') {
    assert.ok(performance.now() < deadline, `not reported within 10 s of its 1 s delay:\n${logs.join('\n')}`);
    await delay(100);
  }
  assert.deepEqual(
    // Each line is "<Date.now()> <level> <message>".
    logs.filter((l) => l.includes('reporting it in')).map((l) => l.slice(l.indexOf(' ') + 1)),
    [`info node-1: test: ${Need.needed}: reporting it in 1000 ms`],
  );
});

test('a stopped agent acts on nothing it was deciding: a grant verified after the stop reboots nothing and writes nothing', async () => {
  const node = 'node-0';
  await core.patchNode(
    {
      name: node,
      body: {
        // A grant shown in RebootGranted, and no marker of a reboot under way (an earlier test's).
        metadata: {
          annotations: {
            [Annotations.rebootOk]: 'v1.granted',
            [Annotations.state]: Phase.rebootGranted,
            [Annotations.rebootInProgress]: null,
            [Annotations.bootIdBefore]: null,
          },
        },
        spec: { unschedulable: true },
      },
    },
    mergePatch,
  );
  const client = new LeanClient(kubeconfigCredentials(cluster.kubeconfigPath));
  let release: (verdict: GrantVerdict) => void = () => {};
  const verdict = new Promise<GrantVerdict>((resolve) => {
    release = resolve;
  });
  let verifying = false;
  const reboots: string[] = [];
  const agent = new NodeAgent({
    nodeName: node,
    client,
    detector: { name: 'none', check: async () => ({ need: Need.notNeeded, reason: 'test' }) },
    rebooter: { name: 'recorded', reboot: async () => void reboots.push(new Date().toISOString()) },
    bootId: { read: async () => 'boot-1' },
    // The grant's check is the step's one wait before it acts: the agent is stopped during it.
    grants: {
      verify: () => {
        verifying = true;
        return verdict;
      },
    },
    checkIntervalMs: 3_600_000,
  });
  const stop = new AbortController();
  const done = agent.run(stop.signal);
  try {
    await pollUntil('the agent to check the grant', () => (verifying ? true : undefined));
    stop.abort();
    release({ check: GrantCheck.valid });
    await done;
    assert.deepEqual(reboots, [], 'no reboot after the stop');
    const annotations = (await core.readNode({ name: node })).metadata?.annotations ?? {};
    assert.equal(annotations[Annotations.rebootInProgress], undefined, 'no marker written after the stop');
  } finally {
    stop.abort();
    release({ check: GrantCheck.valid });
    await done;
    client.close();
    await core.patchNode(
      {
        name: node,
        body: {
          metadata: { annotations: { [Annotations.rebootOk]: null, [Annotations.state]: null } },
          spec: { unschedulable: false },
        },
      },
      mergePatch,
    );
  }
});
