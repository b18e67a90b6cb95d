/**
 * nuo coordinating nodes whose agent speaks FLUO's protocol, on the real control plane: a pool of three
 * nodes whose agent is FLUO's update-agent as played by src/sim/protocol-agent.ts (its writes, in its
 * order, through its own ServiceAccount's pod-bound token, under the admission policy that confines it),
 * beside a pool of nuo's own simulated agents, with before- and after-reboot hooks answered through FLUO's
 * labels (CLUO's agent's token is held to its own admission policy too). While FLUO's own update-operator
 * holds its Lease, nuo touches no node of the FLUO pool and says why; once it is gone, both pools finish under their budgets, and the independent checker sees no
 * reboot without nuo's grant or cordon and never more nodes disrupted than both budgets together. A
 * reboot granted by another client instead (FLUO's own operator), which the agent then cordons and drains
 * itself, is recorded as two violations.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  V1MicroTime,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../../src/api/crd.ts';
import { AgentProtocol, Annotations, PROTOCOL_OPERATOR, protocolKeys } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { Condition, UpdatePolicy, UpdatePolicySpec } from '../../src/api/update-policy.ts';
import { ResilientInformer } from '../../src/kube/informer.ts';
import { LeanApiError, LeanClient, type LeanNode } from '../../src/kube/lean-client.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import type { Budget } from '../../src/sim/checker.ts';
import { tokenKubeconfig } from '../../src/sim/cluster/kubeconfig.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import type { HostAgent } from '../../src/sim/host.ts';
import { installPolicyCrd } from '../../src/sim/policies.ts';
import { ProtocolAgent } from '../../src/sim/protocol-agent.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { cluoManifests } from '../../tools/cluo/manifests.ts';
import { FAST_LEASE, rebootedOnce, runNuo, useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 6 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
const coordination = cluster.kubeconfig.makeApiClient(CoordinationV1Api);
const FLUO = AgentProtocol.flatcar;
const K = protocolKeys(FLUO);
const FLUO_NODES = ['node-0', 'node-1', 'node-2'];
const NUO_NODES = ['node-3', 'node-4', 'node-5'];
/** Where FLUO's own manifests install it, and the agent's ServiceAccount the admission policy names. */
const FLUO_NS = 'reboot-coordinator';
const AGENT_SA = 'flatcar-linux-update-agent';
/** CLUO's manifests run its agent's DaemonSet and its operator's Deployment as the namespace's default account. */
const CLUO_AGENT = { sa: 'default', app: 'container-linux-update-agent', writes: 'update' } as const;
const CLUO_OPERATOR = { sa: 'default', app: 'container-linux-update-operator', writes: 'update' } as const;
const C = protocolKeys(AgentProtocol.containerLinux);
const BEFORE = 'example.com/before-reboot-check';
const AFTER = 'example.com/after-reboot-check';
const NEW_VERSION = '4081.2.1';
const ref = { group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural };
const policyFile = fileURLToPath(new URL('../../deploy/base/protocol-agent-policy.yaml', import.meta.url));

const kubectl = (args: string[], input?: string) => {
  const r = spawnSync(cluster.binaries.path.kubectl, [`--kubeconfig=${cluster.kubeconfigPath}`, ...args], {
    encoding: 'utf8',
    ...(input === undefined ? {} : { input }),
  });
  assert.equal(r.status, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
};

/**
 * An update-agent's identity: what its DaemonSet's pods on the pool's nodes run as, with the RBAC their
 * own manifests grant it.
 */
const agentManifests = (sa: string, pool: string) => `
apiVersion: v1
kind: ServiceAccount
metadata: { name: ${sa}, namespace: ${FLUO_NS} }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: ${sa} }
rules:
  - { apiGroups: [""], resources: [nodes], verbs: [get, list, watch, update, patch] }
  - { apiGroups: [""], resources: [pods], verbs: [list, get, delete] }
  - { apiGroups: [""], resources: [pods/eviction], verbs: [create] }
  - { apiGroups: [apps], resources: [daemonsets], verbs: [get] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: ${sa} }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ${sa} }
subjects: [{ kind: ServiceAccount, name: ${sa}, namespace: ${FLUO_NS} }]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: { name: ${sa}, namespace: ${FLUO_NS} }
spec:
  selector: { matchLabels: { app: ${sa} } }
  template:
    metadata: { labels: { app: ${sa} } }
    spec:
      serviceAccountName: ${sa}
      nodeSelector: { pool: ${pool} }
      tolerations: [{ operator: Exists }]
      containers: [{ name: update-agent, image: update-agent }]
`;

/** Per FLUO node: its agent's clients, with a token bound to its DaemonSet pod there (so to its node). */
const agentClients = new Map<string, Awaited<ReturnType<typeof agentClientsFor>>>();

async function agentPodOn(node: string | undefined, app: string): Promise<V1Pod> {
  return pollUntil(`${app}'s pod on ${node ?? 'any node'}`, async () => {
    const pods = await core.listNamespacedPod({
      namespace: FLUO_NS,
      ...(node === undefined ? {} : { fieldSelector: `spec.nodeName=${node}` }),
      labelSelector: `app=${app}`,
    });
    return pods.items[0];
  });
}

/** An RFC 7386 JSON merge patch applied to a copy of `target`. */
function merged(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const isObject = typeof target === 'object' && target !== null && !Array.isArray(target);
  const out: Record<string, unknown> = isObject ? { ...(target as Record<string, unknown>) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = merged(out[key], value);
  }
  return out;
}

/**
 * A Node written as CLUO's agent writes it: read, changed, replaced whole, read again on a conflict (as
 * client-go's RetryOnConflict); a refusal as LeanApiError.
 */
async function updateNode(api: CoreV1Api, name: string, patch: object): Promise<LeanNode> {
  for (let attempt = 1; ; attempt++) {
    const node = await api.readNode({ name });
    try {
      return (await api.replaceNode({ name, body: merged(node, patch) as V1Node })) as LeanNode;
    } catch (err) {
      if (!(err instanceof ApiException)) throw err;
      if (err.code === 409 && attempt < 5) continue;
      throw new LeanApiError(err.code, `PUT node ${name}: ${String(err.body)}`);
    }
  }
}

/**
 * Clients with a token bound to the pod of `app` on `node` (any node if undefined), as `sa`, and how that
 * pod writes a Node: a merge patch, or (CLUO, whose RBAC has update and not patch) read, change, replace.
 */
async function agentClientsFor(
  node: string | undefined,
  { sa, app, writes }: { sa: string; app: string; writes: 'patch' | 'update' } = {
    sa: AGENT_SA,
    app: AGENT_SA,
    writes: 'patch',
  },
) {
  const pod = await agentPodOn(node, app);
  const review = await core.createNamespacedServiceAccountToken({
    name: sa,
    namespace: FLUO_NS,
    body: {
      spec: {
        audiences: [],
        expirationSeconds: 3600,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name, uid: pod.metadata?.uid },
      },
    },
  });
  const token = review.status?.token ?? '';
  const kc = new KubeConfig();
  kc.loadFromString(tokenKubeconfig(cluster.server, cluster.caCert, sa, token));
  const lean = new LeanClient({ server: cluster.server, ca: cluster.caCert, token: () => token });
  const api = kc.makeApiClient(CoreV1Api);
  const write =
    writes === 'patch'
      ? (name: string, patch: object) => lean.patchNode(name, patch)
      : (name: string, patch: object) => updateNode(api, name, patch);
  return { lean, core: api, write };
}

const fluoAgent = (node: string): HostAgent => ({
  run: (host, signal) => {
    const clients = agentClients.get(node);
    if (!clients) throw new Error(`no agent clients for ${node}`);
    return new ProtocolAgent({
      protocol: FLUO,
      nodeName: node,
      client: clients.lean,
      core: clients.core,
      host,
      // Each reboot boots the staged version.
      os: () => ({ id: 'flatcar', version: host.reboots > 0 ? NEW_VERSION : '4081.2.0', group: 'stable' }),
      newVersion: NEW_VERSION,
      log: (level, message) => fleet?.options.log?.(level, message),
    }).run(signal);
  },
});

let fleet: Fleet | undefined;
/** Answers the hooks as a hook DaemonSet would: a label asks, the annotation says "true". */
let hooks: ResilientInformer<V1Node> | undefined;

before(async () => {
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
  await installPolicyCrd(cluster);
  for (const [names, pool] of [
    [FLUO_NODES, 'fluo'],
    [NUO_NODES, 'nuo'],
  ] as const)
    for (const name of names)
      await core.patchNode({ name, body: { metadata: { labels: { pool } } } }, mergePatch);
  kubectl(['create', 'namespace', FLUO_NS]);
  kubectl(['apply', '-f', '-'], agentManifests(AGENT_SA, 'fluo'));
  // CLUO as its own manifests install it (agent on every node, operator), only to hold their tokens to
  // the admission policy; taken away again after that test.
  kubectl(
    ['apply', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items: await cluoManifests() }),
  );
  kubectl(['apply', '-f', policyFile]);
  for (const node of FLUO_NODES) agentClients.set(node, await agentClientsFor(node));
});

after(async () => {
  await hooks?.stop();
  await fleet?.stop();
  for (const c of agentClients.values()) c.lean.close();
});

async function createPolicy(name: string, spec: UpdatePolicySpec): Promise<void> {
  await custom.createClusterCustomObject({
    ...ref,
    body: { apiVersion: `${API_GROUP}/${API_VERSION}`, kind: UPDATE_POLICY.kind, metadata: { name }, spec },
  });
}

async function blocked(name: string): Promise<Condition | undefined> {
  const p = (await custom.getClusterCustomObject({ ...ref, name })) as UpdatePolicy;
  return p.status?.conditions?.find((c) => c.type === 'Blocked');
}

const annotationsOf = async (name: string) => (await core.readNode({ name })).metadata?.annotations ?? {};

/** The policies' budgets, one each, and the two together: never more disrupted than both allow. */
const budgets: Budget[] = [
  { name: 'pool fluo', selects: (l) => l.pool === 'fluo', max: 1, protocol: FLUO },
  { name: 'pool nuo', selects: (l) => l.pool === 'nuo', max: 1 },
  { name: 'both pools', selects: (l) => l.pool === 'fluo' || l.pool === 'nuo', max: 2 },
];

describe("FLUO's protocol", () => {
  test("each agent's token is confined to its own node's keys of its protocol: no grant, no other node", async () => {
    const cases = [
      { keys: K, own: 'node-0', other: 'node-1', foreign: C, clients: agentClients.get('node-0') },
      {
        keys: C,
        own: 'node-3',
        other: 'node-4',
        foreign: K,
        clients: await agentClientsFor('node-3', CLUO_AGENT),
      },
    ];
    for (const { keys, own, other, foreign, clients } of cases) {
      const write = clients?.write ?? assert.fail(`no clients on ${own}`);
      const refused = async (name: string, patch: object) =>
        write(name, patch).then(
          () => assert.fail(`${name}: ${JSON.stringify(patch)} was taken`),
          (err: unknown) => {
            assert.ok(err instanceof LeanApiError, String(err));
            return err.message;
          },
        );
      // A new admission policy takes effect within seconds (longer on a loaded machine): wait until it
      // refuses, keeping the last other answer for the failure message. A grant taken before then is
      // taken back by the admin: the agent's own removal may already be refused, and the same grant
      // written again would change nothing, which the policy lets through.
      let last = 'the grant was taken';
      await pollUntil(
        `the admission policy to refuse a grant on ${own}`,
        async () =>
          write(own, { metadata: { annotations: { [keys.rebootOk]: 'true' } } }).then(
            async () => {
              await core.patchNode(
                { name: own, body: { metadata: { annotations: { [keys.rebootOk]: null } } } },
                mergePatch,
              );
              return undefined;
            },
            (err: unknown) => {
              if (err instanceof LeanApiError && err.status === 422) return err;
              last = String(err);
              return undefined;
            },
          ),
        { timeoutMs: 90_000 },
      ).catch((err: Error) => {
        throw new Error(`${err.message}; last answer: ${last}`);
      });
      const needed = { metadata: { annotations: { [keys.rebootNeeded]: 'true' } } };
      assert.match(await refused(other, needed), /only the Node it runs on/, own);
      for (const patch of [
        { metadata: { labels: { [keys.beforeReboot]: 'true' } } },
        { metadata: { annotations: { [Annotations.state]: Phase.idle } } },
        { metadata: { annotations: { [foreign.rebootNeeded]: 'true' } } },
      ])
        assert.match(await refused(own, patch), /only its own keys/, `${own}: ${JSON.stringify(patch)}`);
      const taint = { spec: { taints: [{ key: 'example.com/x', effect: 'NoSchedule' }] } };
      assert.match(await refused(own, taint), /no Node spec but its cordon/, own);
      const taken = await write(own, {
        metadata: { annotations: { [keys.status]: 'UPDATE_STATUS_IDLE' }, labels: { [keys.id]: 'flatcar' } },
      });
      assert.equal(taken.metadata.annotations?.[keys.status], 'UPDATE_STATUS_IDLE', own);
      const cordoned = await write(own, { spec: { unschedulable: true } });
      assert.equal(cordoned.spec?.unschedulable, true, `${own}: its own cordon is its to make`);
      await write(own, { spec: { unschedulable: false } });
    }
    cases[1]?.clients?.lean.close();

    // CLUO's operator shares its agent's account in CLUO's manifests: its pods are not confined (nuo
    // stands down on a CLUO pool while it runs), so CLUO keeps working until it is removed.
    const operator = await agentClientsFor(undefined, CLUO_OPERATOR);
    try {
      const granted = await operator.write('node-4', {
        metadata: { annotations: { [C.rebootOk]: 'true' } },
      });
      assert.equal(granted.metadata.annotations?.[C.rebootOk], 'true', "CLUO's operator grants on any node");
      await operator.write('node-4', { metadata: { annotations: { [C.rebootOk]: null } } });
    } finally {
      operator.lean.close();
    }
    kubectl(
      ['delete', '-f', '-', '--wait=false'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: (await cluoManifests()).filter((m) => m.kind !== 'Namespace'),
      }),
    );
  });

  test("a FLUO pool waits while FLUO's update-operator runs, then rolls beside a nuo pool under both budgets", async () => {
    const lock = PROTOCOL_OPERATOR[FLUO].lock;
    await coordination.createNamespacedLease({
      namespace: FLUO_NS,
      body: {
        metadata: { name: lock, namespace: FLUO_NS },
        spec: {
          holderIdentity: 'fluo-operator-0',
          leaseDurationSeconds: 3600,
          renewTime: new V1MicroTime(Date.now()),
          acquireTime: new V1MicroTime(Date.now()),
        },
      },
    });
    const quick = { soak: '1s', retryBackoff: '5s' };
    await createPolicy('fluo', {
      nodeSelector: { matchLabels: { pool: 'fluo' } },
      agentProtocol: FLUO,
      maxUnavailable: 1,
      reboot: { ...quick, beforeRebootAnnotations: [BEFORE], afterRebootAnnotations: [AFTER] },
    });
    await createPolicy('nuo', {
      nodeSelector: { matchLabels: { pool: 'nuo' } },
      maxUnavailable: 1,
      reboot: quick,
    });

    hooks = new ResilientInformer<V1Node>({
      kubeconfig: cluster.kubeconfig,
      path: '/api/v1/nodes',
      list: (opts) => core.listNode(opts),
      name: 'hooks',
    });
    const hooksRun: string[] = [];
    hooks.onEvent((type, n) => {
      if (type === 'delete') return;
      const name = n.metadata?.name ?? '';
      const labels = n.metadata?.labels ?? {};
      const a = n.metadata?.annotations ?? {};
      for (const [label, key] of [
        [K.beforeReboot, BEFORE],
        [K.afterReboot, AFTER],
      ] as const) {
        if (labels[label] !== 'true' || a[key] === 'true') continue;
        hooksRun.push(`${name} ${label}`);
        void core.patchNode({ name, body: { metadata: { annotations: { [key]: 'true' } } } }, mergePatch);
      }
    });
    await hooks.start();

    const agents = Object.fromEntries(FLUO_NODES.map((n) => [n, fluoAgent(n)]));
    fleet = new Fleet(cluster, { rebootMs: 300, budget: budgets, agentCheckIntervalMs: 2000, agents });
    await fleet.start();
    fleet.stageUpdates();
    fleet.startOperator('op-a', [...FAST_LEASE, '--blocker-interval=1s']);
    const f = fleet;

    const standDown = await pollUntil('the fluo policy to say why nuo stands down', async () => {
      const c = await blocked('fluo');
      return c?.reason === 'ForeignOperator' && /runs/.test(c.message) ? c : undefined;
    });
    assert.match(standDown.message, new RegExp(`Lease ${FLUO_NS}/${lock} is held by fluo-operator-0`));
    const explained = await runNuo(cluster, 'policy', 'explain', 'node-1');
    assert.equal(explained.code, 0, explained.stderr);
    assert.match(
      explained.stdout,
      /update-operator runs: its Lease reboot-coordinator\/flatcar-linux-update-operator-lock/,
    );
    await rebooted(f, NUO_NODES);
    for (const name of FLUO_NODES) {
      const a = await annotationsOf(name);
      assert.equal(a[K.rebootNeeded], 'true', `${name}: its agent asks for a reboot`);
      assert.equal(a[Annotations.state], undefined, `${name}: nuo touched nothing`);
      assert.equal(a[K.rebootOk], undefined, `${name}: no grant`);
      assert.equal(f.checker.rebootsOf(name), 0);
    }

    await coordination.deleteNamespacedLease({ name: lock, namespace: FLUO_NS });
    await rebooted(f, FLUO_NODES);
    await pollUntil('the fluo policy no longer blocked', async () =>
      (await blocked('fluo'))?.status === 'False' ? true : undefined,
    );
    for (const name of FLUO_NODES) {
      const n = await core.readNode({ name });
      const a = n.metadata?.annotations ?? {};
      assert.equal(a[K.rebootNeeded], 'false', `${name}: the agent's report after its boot`);
      assert.equal(a[K.rebootInProgress], 'false', name);
      assert.equal(a[K.rebootOk], undefined, `${name}: the grant cleared at the end`);
      assert.equal(a[Annotations.grantedBootId], undefined, name);
      assert.equal(n.metadata?.labels?.[K.version], NEW_VERSION, `${name}: runs the staged version`);
      assert.equal(a[Annotations.ineffectiveReboots], undefined, `${name}: the update took`);
      assert.equal(
        a[K.agentMadeUnschedulable],
        undefined,
        `${name}: nuo had cordoned it, so the agent did not`,
      );
      assert.equal(n.spec?.unschedulable, undefined, `${name}: uncordoned`);
      assert.equal(n.metadata?.labels?.[K.afterReboot], undefined, name);
      assert.ok(
        hooksRun.includes(`${name} ${K.beforeReboot}`) && hooksRun.includes(`${name} ${K.afterReboot}`),
        `${name}: both hooks asked for through FLUO's labels`,
      );
    }
    await f.checker.finalCheck();
    await f.checker.settle();
    assert.deepEqual(f.checker.violations, [], 'the checker saw no violation');
    assert.ok(
      f.checker.maxDisrupted <= 2,
      `at most both budgets disrupted at once (saw ${f.checker.maxDisrupted})`,
    );
  });

  test("a FLUO reboot nuo neither granted nor drained is recorded: no grant, the agent's own cordon", async () => {
    const f = fleet ?? assert.fail('the rollout test runs first');
    // FLUO's own operator back in nuo's place: nuo stopped, the grant written by another client.
    await f.killOperator('op-a');
    f.stageUpdates(['node-0']);
    await pollUntil("node-0's agent to ask again", async () =>
      (await annotationsOf('node-0'))[K.rebootNeeded] === 'true' ? true : undefined,
    );
    await core.patchNode(
      { name: 'node-0', body: { metadata: { annotations: { [K.rebootOk]: 'true' } } } },
      mergePatch,
    );
    await pollUntil("node-0's agent to reboot on it", async () =>
      f.checker.rebootsOf('node-0') === 2 ? true : undefined,
    );
    await f.checker.settle();
    const found = f.checker.violations.filter((v) => v.rule === 'reboot-without-grant');
    assert.equal(found.length, 1, JSON.stringify(f.checker.violations));
    const undrained = f.checker.violations.filter((v) => v.rule === 'reboot-not-drained');
    assert.equal(undrained.length, 1, JSON.stringify(f.checker.violations));
    assert.match(
      undrained[0]?.detail ?? '',
      /node-0 rebooted under its agent's own cordon .*, not drained by nuo/,
    );
    assert.match(
      found[0]?.detail ?? '',
      new RegExp(
        `node-0 rebooted without a grant nuo gave: ${K.rebootOk}="true" outside nuo's grant \\(phase Idle\\)`,
      ),
    );
  });
});

/** Every node in `names` rebooted once (as the checker saw it) and back to Idle. */
const rebooted = (f: Fleet, names: readonly string[]) => rebootedOnce(core, f, names);
