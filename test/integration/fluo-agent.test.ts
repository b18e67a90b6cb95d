/**
 * FLUO's real update-agent (built by tools/fluo/build.ts, unmodified) as a simulated node's agent on the
 * real control plane: under runc, with its ServiceAccount's token and the node's private system bus
 * (src/sim/fluo-agent.ts), and no nuo operator. The test plays FLUO's update-operator for one reboot, as
 * its source does, and a watch on the Node records every write, so the protocol is checked in order.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  AppsV1Api,
  AuthenticationV1Api,
  CoreV1Api,
  KubeConfig,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { mergePatch } from '../../src/kube/patch.ts';
import { tokenKubeconfig } from '../../src/sim/cluster/kubeconfig.ts';
import type { WatchEvent } from '../../src/sim/cluster/raw-api.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { FLUO_AGENT_ACCOUNT } from '../../src/sim/fluo-agent.ts';
import { FIRST_FLATCAR_VERSION } from '../../src/sim/fluo-os.ts';
import { daemonSet, deployment } from '../../src/sim/workload.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { useCluster } from './support.ts';

/** FLUO's protocol keys (its pkg/constants), all under one prefix the agent cannot be told another of. */
const PREFIX = 'flatcar-linux-update.v1.flatcar-linux.net/';
const K = {
  rebootNeeded: `${PREFIX}reboot-needed`,
  rebootInProgress: `${PREFIX}reboot-in-progress`,
  rebootOk: `${PREFIX}reboot-ok`,
  status: `${PREFIX}status`,
  newVersion: `${PREFIX}new-version`,
  lastCheckedTime: `${PREFIX}last-checked-time`,
  agentMadeUnschedulable: `${PREFIX}agent-made-unschedulable`,
  beforeReboot: `${PREFIX}before-reboot`,
  afterReboot: `${PREFIX}after-reboot`,
  id: `${PREFIX}id`,
  group: `${PREFIX}group`,
  version: `${PREFIX}version`,
} as const;
const NODE = 'node-0';
const NEXT_VERSION = '4152.2.1';

const cluster = await useCluster({ nodes: 2 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);

/** One write to the Node as the watch saw it: what changed, as `a:key=value`, `l:key=value` or `field=value`. */
type Change = string;

/** Records every change to the Node's FLUO keys, cordon, Ready condition and boot ID, one entry per write. */
class NodeHistory {
  readonly writes: Change[][] = [];
  readonly #stop = new AbortController();
  #last = new Map<string, string>();
  #done: Promise<void> = Promise.resolve();

  async start(): Promise<void> {
    const node = await core.readNode({ name: NODE });
    this.#record(node);
    const rv = node.metadata?.resourceVersion ?? '0';
    this.#done = cluster.raw.watch<V1Node>(
      `/api/v1/nodes?fieldSelector=metadata.name%3D${NODE}&watch=1&resourceVersion=${rv}`,
      (e: WatchEvent<V1Node>) => {
        if (e.type === 'MODIFIED') this.#record(e.object);
      },
      this.#stop.signal,
    );
  }

  #record(node: V1Node): void {
    const now = new Map<string, string>();
    for (const [k, v] of Object.entries(node.metadata?.annotations ?? {}))
      if (k.startsWith(PREFIX)) now.set(`a:${k.slice(PREFIX.length)}`, v);
    for (const [k, v] of Object.entries(node.metadata?.labels ?? {}))
      if (k.startsWith(PREFIX)) now.set(`l:${k.slice(PREFIX.length)}`, v);
    now.set('unschedulable', String(node.spec?.unschedulable ?? false));
    now.set('Ready', node.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? 'Unknown');
    now.set('bootID', node.status?.nodeInfo?.bootID ?? '');
    const changes = [...now]
      .filter(([k, v]) => this.#last.get(k) !== v && k !== 'a:last-checked-time')
      .map(([k, v]) => (k === 'bootID' ? 'bootID changed' : `${k}=${v}`));
    for (const k of this.#last.keys()) if (!now.has(k)) changes.push(`${k} removed`);
    this.#last = now;
    if (changes.length > 0) this.writes.push(changes);
  }

  /** The index of the first write at or after `from` that made all of `changes`; fails if there is none. */
  indexOf(changes: Change[], from = 0): number {
    const i = this.writes.findIndex((w, j) => j >= from && changes.every((c) => w.includes(c)));
    assert.ok(i >= 0, `no write made ${changes.join(', ')} after write ${from}:\n${this.dump()}`);
    return i;
  }

  dump(): string {
    return this.writes.map((w, i) => `${i}: ${w.join(', ')}`).join('\n');
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#done.catch(() => {});
  }
}

async function annotate(values: Record<string, string | null>, labels: Record<string, string | null> = {}) {
  await core.patchNode({ name: NODE, body: { metadata: { annotations: values, labels } } }, mergePatch);
}

async function nodeWhere(what: string, check: (n: V1Node) => boolean, timeoutMs = 60_000): Promise<V1Node> {
  return pollUntil(
    what,
    async () => {
      const n = await core.readNode({ name: NODE });
      return check(n) ? n : undefined;
    },
    { timeoutMs, intervalMs: 200 },
  );
}

const annotation = (n: V1Node, key: string) => n.metadata?.annotations?.[key];
const label = (n: V1Node, key: string) => n.metadata?.labels?.[key];

describe("FLUO's update-agent on a simulated node, with the test as FLUO's operator", () => {
  const history = new NodeHistory();
  let fleet: Fleet;
  let webPod: V1Pod;

  before(async () => {
    // A Deployment's pod that prefers node-0 (the agent evicts it) and a DaemonSet's (the agent leaves it).
    await core.createNamespace({ body: { metadata: { name: 'app' } } });
    await pollUntil('default ServiceAccount in app', () =>
      core.readNamespacedServiceAccount({ name: 'default', namespace: 'app' }).then(() => true),
    );
    const web = deployment('app', 'web', 1);
    const spec = web.spec?.template.spec;
    assert.ok(spec);
    spec.affinity = {
      nodeAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            preference: { matchFields: [{ key: 'metadata.name', operator: 'In', values: [NODE] }] },
          },
        ],
      },
    };
    await apps.createNamespacedDeployment({ namespace: 'app', body: web });
    await apps.createNamespacedDaemonSet({ namespace: 'app', body: daemonSet('app', 'logs') });
    webPod = await pollUntil(
      'the web pod Running on node-0',
      async () => {
        const pods = await core.listNamespacedPod({ namespace: 'app', labelSelector: 'app=web' });
        return pods.items.find((p) => p.spec?.nodeName === NODE && p.status?.phase === 'Running');
      },
      { timeoutMs: 60_000 },
    );
    await history.start();
    fleet = new Fleet(cluster, { rebootMs: 2000, budget: 1, fluoNodes: [NODE] });
    await fleet.start();
  });

  after(async () => {
    await fleet?.stop();
    await history.stop();
  });

  test('it labels its node and reports update_engine idle, as FLUO does at start', async () => {
    const fluo = fleet.fluo?.nodes.get(NODE);
    assert.ok(fluo, 'node-0 runs FLUO');
    const node = await nodeWhere(
      'FLUO to report update_engine idle',
      (n) => annotation(n, K.status) === 'UPDATE_STATUS_IDLE',
    ).catch((err: Error) => {
      throw new Error(`${err.message}\nagent output:\n${fluo.output()}`);
    });
    assert.equal(label(node, K.id), 'flatcar');
    assert.equal(label(node, K.group), 'stable');
    assert.equal(label(node, K.version), FIRST_FLATCAR_VERSION);
    assert.equal(label(node, K.rebootNeeded), 'false');
    assert.equal(annotation(node, K.rebootNeeded), 'false');
    assert.equal(annotation(node, K.rebootInProgress), 'false');
    assert.equal(annotation(node, K.newVersion), '');
    assert.match(annotation(node, K.lastCheckedTime) ?? '', /^\d+$/);
    assert.equal(node.spec?.unschedulable ?? false, false);
    const info = history.indexOf([`l:id=flatcar`, 'l:group=stable', `l:version=${FIRST_FLATCAR_VERSION}`]);
    const reset = history.indexOf(
      ['a:reboot-in-progress=false', 'a:reboot-needed=false', 'l:reboot-needed=false'],
      info + 1,
    );
    history.indexOf(['a:status=UPDATE_STATUS_IDLE', 'a:new-version='], reset + 1);
    assert.equal(fluo.starts, 1);
    assert.match(fluo.output(), /update-agent running/);
  });

  test("its token is FLUO's agent ServiceAccount's, carrying the node's name as a pod's token does", async () => {
    const fluo = fleet.fluo?.nodes.get(NODE);
    assert.ok(fluo);
    const token = await readFile(join(fluo.serviceAccountDir, 'token'), 'utf8');
    const kc = new KubeConfig();
    kc.loadFromString(tokenKubeconfig(cluster.server, cluster.caCert, 'fluo-agent', token));
    const review = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({ body: {} });
    const user = review.status?.userInfo;
    assert.equal(
      user?.username,
      `system:serviceaccount:${FLUO_AGENT_ACCOUNT.namespace}:${FLUO_AGENT_ACCOUNT.name}`,
    );
    assert.deepEqual(user?.extra?.['authentication.kubernetes.io/node-name'], [NODE]);
  });

  test('an agent that dies is started again, as the kubelet restarts its pod, and waits as before', async () => {
    const fluo = fleet.fluo?.nodes.get(NODE);
    assert.ok(fluo);
    const pid = fluo.pid();
    assert.ok(pid, 'a container runs');
    const starts = fluo.starts;
    process.kill(pid, 'SIGKILL');
    await pollUntil(
      'a new container after the agent died',
      () => {
        const now = fluo.pid();
        return fluo.starts === starts + 1 && now !== undefined && now !== pid ? true : undefined;
      },
      { timeoutMs: 30_000 },
    );
    await pollUntil('the new agent to wait for reboot-ok', () =>
      fluo.output().split('update-agent running')[starts + 1]?.includes('Waiting for ok-to-reboot')
        ? true
        : undefined,
    );
    const node = await core.readNode({ name: NODE });
    assert.equal(annotation(node, K.status), 'UPDATE_STATUS_IDLE');
    assert.equal(node.spec?.unschedulable ?? false, false);
  });

  test('update_engine needing a reboot, the operator granting it: drain, logind Reboot, a new boot, the labels reset', async () => {
    const fluo = fleet.fluo?.nodes.get(NODE);
    const host = fleet.hosts.get(NODE);
    assert.ok(fluo && host);
    const bootBefore = host.bootIdValue;
    const starts = fluo.starts;
    const logsPod = (
      await core.listNamespacedPod({ namespace: 'app', labelSelector: 'app=logs' })
    ).items.find((p) => p.spec?.nodeName === NODE);
    assert.ok(logsPod, 'a DaemonSet pod on node-0');

    fleet.stageUpdates([NODE]);
    const needing = await nodeWhere(
      'FLUO to report reboot-needed',
      (n) => label(n, K.rebootNeeded) === 'true',
    );
    assert.equal(annotation(needing, K.rebootNeeded), 'true');
    assert.equal(annotation(needing, K.status), 'UPDATE_STATUS_UPDATED_NEED_REBOOT');
    assert.equal(annotation(needing, K.newVersion), NEXT_VERSION);
    assert.equal(fluo.logind.calls.length, 0, 'no reboot before the operator says so');

    // FLUO's operator: a rebootable node gets before-reboot=true; with no before-reboot checks configured,
    // its next pass removes the label and sets reboot-ok=true.
    await annotate({}, { [K.beforeReboot]: 'true' });
    await annotate({ [K.rebootOk]: 'true' }, { [K.beforeReboot]: null });

    const rebooted = await nodeWhere(
      'the host to reboot with a new boot ID and FLUO to reset its keys after it',
      (n) =>
        n.status?.nodeInfo?.bootID !== bootBefore &&
        annotation(n, K.rebootNeeded) === 'false' &&
        annotation(n, K.rebootInProgress) === 'false',
    );
    assert.equal(label(rebooted, K.version), NEXT_VERSION, 'the new boot runs the staged version');
    assert.deepEqual(fluo.os, { version: NEXT_VERSION });
    assert.equal(label(rebooted, K.rebootNeeded), 'false');
    assert.equal(
      rebooted.spec?.unschedulable,
      true,
      'still cordoned: the agent waits for reboot-ok to clear',
    );
    assert.deepEqual(
      fluo.logind.calls.map((c) => [c.signature, c.body]),
      [['b', [false]]],
      'one Reboot call, interactive=false',
    );
    assert.equal(host.reboots, 1);
    assert.equal(fluo.starts, starts + 1, 'the boot started a new container');

    // FLUO's operator: a just-rebooted node gets after-reboot=true; with no after-reboot checks, its next
    // pass removes it and sets reboot-ok=false, which lets the agent uncordon.
    await annotate({}, { [K.afterReboot]: 'true' });
    await annotate({ [K.rebootOk]: 'false' }, { [K.afterReboot]: null });
    const done = await nodeWhere(
      'FLUO to uncordon and report update_engine idle',
      (n) =>
        !n.spec?.unschedulable &&
        annotation(n, K.agentMadeUnschedulable) === 'false' &&
        annotation(n, K.status) === 'UPDATE_STATUS_IDLE',
    );
    assert.equal(annotation(done, K.newVersion), '');

    // The drain: the Deployment's pod evicted (its replacement on node-1), the DaemonSet's left.
    await assert.rejects(
      core.readNamespacedPod({ name: webPod.metadata?.name ?? '', namespace: 'app' }),
      /404|not found/i,
    );
    const moved = await core.listNamespacedPod({ namespace: 'app', labelSelector: 'app=web' });
    assert.deepEqual(
      moved.items.map((p) => p.spec?.nodeName),
      ['node-1'],
    );
    const logsAfter = await core.readNamespacedPod({ name: logsPod.metadata?.name ?? '', namespace: 'app' });
    assert.equal(logsAfter.metadata?.uid, logsPod.metadata?.uid, 'the DaemonSet pod stayed');

    // The protocol in order, from the watch: every write the agent, the host and the operator made.
    const h = history;
    const staged = h.indexOf([
      'a:status=UPDATE_STATUS_UPDATED_NEED_REBOOT',
      `a:new-version=${NEXT_VERSION}`,
      'a:reboot-needed=true',
      'l:reboot-needed=true',
    ]);
    const ok = h.indexOf(['a:reboot-ok=true'], staged + 1);
    const inProgress = h.indexOf(['a:reboot-in-progress=true', 'a:agent-made-unschedulable=true'], ok + 1);
    const cordon = h.indexOf(['unschedulable=true'], inProgress + 1);
    const down = h.indexOf(['Ready=False'], cordon + 1);
    // On the new boot the agent and the kubelet each report, in either order (both start at boot).
    const up = h.indexOf(['Ready=True', 'bootID changed'], down + 1);
    const info = h.indexOf([`l:version=${NEXT_VERSION}`], down + 1);
    const reset = h.indexOf(
      ['a:reboot-in-progress=false', 'a:reboot-needed=false', 'l:reboot-needed=false'],
      info + 1,
    );
    // The operator's answer waits for both: the health gate is on the new boot.
    const notOk = h.indexOf(['a:reboot-ok=false'], Math.max(reset, up) + 1);
    const uncordon = h.indexOf(['unschedulable=false'], notOk + 1);
    const cleared = h.indexOf(['a:agent-made-unschedulable=false'], uncordon + 1);
    h.indexOf(['a:status=UPDATE_STATUS_IDLE', 'a:new-version='], cleared + 1);
    assert.ok(
      h.writes.flat().every((c) => !c.includes('container-linux-update.v1.coreos.com')),
      'only the Flatcar prefix',
    );
    assert.equal(fluo.logind.calls.length, 1, 'no second reboot');
  });

  test('a node cordoned before the grant stays cordoned after the reboot: the agent uncordons only its own cordon', async () => {
    const fluo = fleet.fluo?.nodes.get(NODE);
    const host = fleet.hosts.get(NODE);
    assert.ok(fluo && host);
    const bootBefore = host.bootIdValue;
    const evictions = fluo
      .output()
      .split('\n')
      .filter((l) => /Deleting\/Evicting/.test(l)).length;
    // As an operator that drains before it grants: the cordon is not the agent's.
    await core.patchNode({ name: NODE, body: { spec: { unschedulable: true } } }, mergePatch);
    fleet.stageUpdates([NODE]);
    await nodeWhere('FLUO to report reboot-needed again', (n) => annotation(n, K.rebootNeeded) === 'true');
    await annotate({ [K.rebootOk]: 'true' });
    await nodeWhere(
      'the second reboot',
      (n) => n.status?.nodeInfo?.bootID !== bootBefore && annotation(n, K.rebootNeeded) === 'false',
    );
    await annotate({ [K.rebootOk]: 'false' });
    const after = await nodeWhere(
      'FLUO to report update_engine idle after the second reboot',
      (n) => annotation(n, K.status) === 'UPDATE_STATUS_IDLE' && label(n, K.version) === '4152.2.2',
    );
    assert.equal(after.spec?.unschedulable, true, 'still cordoned: the operator that cordoned must uncordon');
    assert.equal(annotation(after, K.agentMadeUnschedulable), 'false', 'the agent did not claim the cordon');
    assert.match(fluo.output(), /node was marked unschedulable by an external source/);
    const lines = fluo
      .output()
      .split('\n')
      .filter((l) => /Deleting\/Evicting/.test(l));
    assert.equal(lines.length, evictions + 1);
    assert.match(lines.at(-1) ?? '', /Deleting\/Evicting 0 pods/, 'nothing left to drain');
    await core.patchNode({ name: NODE, body: { spec: { unschedulable: false } } }, mergePatch);
  });

  test("a second fleet on the same cluster runs FLUO's agent again", async () => {
    await fleet.stop();
    fleet = new Fleet(cluster, { rebootMs: 2000, budget: 1, fluoNodes: [NODE] });
    await fleet.start();
    const fluo = fleet.fluo?.nodes.get(NODE);
    assert.ok(fluo);
    await pollUntil(
      "the new fleet's agent to wait for reboot-ok",
      () => (/Waiting for ok-to-reboot/.test(fluo.output()) ? true : undefined),
      { timeoutMs: 60_000 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}\nagent output:\n${fluo.output()}`);
    });
  });
});
