/**
 * A foreign operator's leader-election lock judged on the real control plane as client-go judges one: by
 * when this operator saw its record change, on its own clock, while nuo's wall clock runs 10 minutes ahead
 * (Debian's libfaketime). CLUO, installed from its own manifests under another Deployment name, holds its
 * ConfigMap lock (or its older Endpoints lock) through client-go's own lock code (tools/cluo/lock); FLUO's
 * update-operator renews its Lease (a 90 s duration, renewTime written on its own clock). nuo stands down
 * on each pool all the while, and takes it once the lock is gone.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { after, afterEach, before, test } from 'node:test';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, V1MicroTime } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../../src/api/crd.ts';
import { AgentProtocol, Annotations, PROTOCOL_OPERATOR, protocolKeys } from '../../src/api/keys.ts';
import type { Condition, UpdatePolicy } from '../../src/api/update-policy.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import { FLEET_POLICY, Fleet } from '../../src/sim/fleet.ts';
import type { HostAgent } from '../../src/sim/host.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { ensureCluoLock } from '../../tools/cluo/build.ts';
import { cluoManifests } from '../../tools/cluo/manifests.ts';
import { FAST_LEASE, resetNodes, useCluster } from './support.ts';

const NODES = ['node-0', 'node-1', 'node-2'];
const cluster = await useCluster({ nodes: NODES.length });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
const coordination = cluster.kubeconfig.makeApiClient(CoordinationV1Api);
const FLUO = AgentProtocol.flatcar;
const K = protocolKeys(FLUO);
const CLUO = AgentProtocol.containerLinux;
const C = protocolKeys(CLUO);
/** Where FLUO's manifests install its update-operator, and the duration its leader election uses. */
const FLUO_NS = 'reboot-coordinator';
const FLUO_LEASE_SECONDS = 90;
/** nuo's clock ahead of the Lease holder's by more than the Lease's duration. */
const SKEW_S = 600;

let fleet: Fleet | undefined;
after(() => fleet?.stop());

before(async () => {
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
  await core.createNamespace({ body: { metadata: { name: FLUO_NS } } });
});

afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
  await resetNodes(core, { uncordonAll: true });
});

/** An agent that says nothing: the test writes FLUO's need itself, and nothing reboots. */
const silent: HostAgent = {
  run: (_host, signal) => new Promise((resolve) => signal.addEventListener('abort', () => resolve())),
};

async function blocked(): Promise<Condition | undefined> {
  const ref = { group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural };
  const p = (await custom.getClusterCustomObject({ ...ref, name: FLEET_POLICY })) as UpdatePolicy;
  return p.status?.conditions?.find((c) => c.type === 'Blocked');
}

const touched = async () =>
  (await core.listNode()).items.filter((n) => n.metadata?.annotations?.[Annotations.state] !== undefined);

const kubectl = (args: string[], input?: string) => {
  const r = spawnSync(cluster.binaries.path.kubectl, [`--kubeconfig=${cluster.kubeconfigPath}`, ...args], {
    encoding: 'utf8',
    ...(input === undefined ? {} : { input }),
  });
  assert.equal(r.status, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
};

/** CLUO's update-operator's lock, held as its operator holds it (client-go's lock, never released). */
async function holdCluoLock(kind: 'configmap' | 'endpoints', identity: string): Promise<ChildProcess> {
  const holder = spawn(
    await ensureCluoLock(),
    [`-kubeconfig=${cluster.kubeconfigPath}`, `-kind=${kind}`, `-identity=${identity}`],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const said: string[] = [];
  holder.stderr?.on('data', (chunk: Buffer) => said.push(chunk.toString()));
  await pollUntil(`CLUO's ${kind} lock to lead`, async () =>
    said.join('').includes(`leading as ${identity}`)
      ? true
      : holder.exitCode !== null
        ? assert.fail(`the lock holder exited ${holder.exitCode}: ${said.join('')}`)
        : undefined,
  );
  return holder;
}

async function stop(holder: ChildProcess): Promise<void> {
  if (holder.exitCode !== null) return;
  const exited = once(holder, 'exit');
  holder.kill('SIGTERM');
  await exited;
}

test("CLUO installed from its own manifests under another Deployment name, its operator holding its older Endpoints lock, then its ConfigMap lock, through client-go: nuo, its clock 10 minutes ahead, stays off CLUO's pool while either is held and takes the pool once they are gone", async (t) => {
  // CLUO's manifests as shipped, its Deployment under a kustomize-style prefix: its name tells nothing.
  const renamed = (await cluoManifests()).map((m) =>
    m.kind === 'Deployment'
      ? {
          ...m,
          metadata: { ...(m.metadata as object), name: `infra-${(m.metadata as { name: string }).name}` },
        }
      : m,
  );
  kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: renamed }));
  t.after(() =>
    kubectl(
      ['delete', '-f', '-', '--ignore-not-found', '--wait=false'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: renamed.filter((m) => m.kind !== 'Namespace'),
      }),
    ),
  );
  const lock = PROTOCOL_OPERATOR[CLUO].lock;
  const f = new Fleet(cluster, {
    rebootMs: 300,
    budget: [{ name: 'pool', selects: () => true, max: 1, protocol: CLUO }],
    agents: Object.fromEntries(NODES.map((n) => [n, silent])),
  });
  fleet = f;
  await f.start();
  await f.applyPolicy({ agentProtocol: CLUO, maxUnavailable: 1, reboot: { soak: '1s' } });
  for (const name of NODES)
    await core.patchNode(
      { name, body: { metadata: { annotations: { [C.rebootNeeded]: 'true' } } } },
      mergePatch,
    );
  t.after(async () => {
    for (const name of NODES)
      await core.patchNode(
        { name, body: { metadata: { annotations: { [C.rebootNeeded]: null, [C.rebootOk]: null } } } },
        mergePatch,
      );
  });

  f.startOperator('op-ahead', [...FAST_LEASE, '--blocker-interval=1s'], { clockSkewS: SKEW_S });
  const standsDownFor = async (what: string, holder: string) => {
    const c = await pollUntil(`nuo to stand down on CLUO's pool for its ${what} lock`, async () => {
      const b = await blocked();
      return b?.reason === 'ForeignOperator' && b.message.includes(`its ${what} `) ? b : undefined;
    });
    assert.match(
      c.message,
      new RegExp(`CLUO's update-operator runs: its ${what} ${FLUO_NS}/${lock} is held by ${holder}`),
    );
    assert.deepEqual(
      (await touched()).map((n) => n.metadata?.name),
      [],
      `no node touched while its ${what} lock is held`,
    );
  };
  // CLUO before 0.4: an Endpoints lock.
  const old = await holdCluoLock('endpoints', 'cluo-old');
  t.after(() => stop(old));
  await standsDownFor('Endpoints', 'cluo-old');
  // Upgraded to 0.7: a ConfigMap lock; the old one stops (CLUO never releases its lock) and is deleted.
  const current = await holdCluoLock('configmap', 'cluo-0');
  t.after(() => stop(current));
  await stop(old);
  await core.deleteNamespacedEndpoints({ name: lock, namespace: FLUO_NS });
  await standsDownFor('ConfigMap', 'cluo-0');
  // Uninstalled: its operator stopped, its lock deleted with it.
  await stop(current);
  await core.deleteNamespacedConfigMap({ name: lock, namespace: FLUO_NS });
  await pollUntil('nuo to take the pool once the locks are gone', async () => {
    const c = await blocked();
    return c?.reason !== 'ForeignOperator' && (await touched()).length > 0 ? true : undefined;
  });
});

test("FLUO's update-operator renewing its Lease keeps nuo, its clock 10 minutes ahead, off FLUO's pool; once the Lease is gone, nuo takes the pool", async () => {
  const lock = PROTOCOL_OPERATOR[FLUO].lock;
  await coordination.createNamespacedLease({
    namespace: FLUO_NS,
    body: {
      metadata: { name: lock, namespace: FLUO_NS },
      spec: {
        holderIdentity: 'fluo-operator-0',
        leaseDurationSeconds: FLUO_LEASE_SECONDS,
        acquireTime: new V1MicroTime(Date.now()),
        renewTime: new V1MicroTime(Date.now()),
      },
    },
  });
  // FLUO's leader renews every 2 s, as client-go's retry period does, on the real clock.
  const renewing = setInterval(() => {
    void coordination
      .patchNamespacedLease(
        { name: lock, namespace: FLUO_NS, body: { spec: { renewTime: new V1MicroTime(Date.now()) } } },
        mergePatch,
      )
      .catch(() => {});
  }, 2000);
  try {
    const f = new Fleet(cluster, {
      rebootMs: 300,
      budget: [{ name: 'pool', selects: () => true, max: 1, protocol: FLUO }],
      agents: Object.fromEntries(NODES.map((n) => [n, silent])),
    });
    fleet = f;
    await f.start();
    await f.applyPolicy({ agentProtocol: FLUO, maxUnavailable: 1, reboot: { soak: '1s' } });
    for (const name of NODES)
      await core.patchNode(
        { name, body: { metadata: { annotations: { [K.rebootNeeded]: 'true' } } } },
        mergePatch,
      );
    f.startOperator('op-ahead', [...FAST_LEASE, '--blocker-interval=1s'], { clockSkewS: SKEW_S });

    const standDown = await pollUntil('nuo to stand down on the pool', async () => {
      const c = await blocked();
      return c?.reason === 'ForeignOperator' ? c : undefined;
    });
    assert.match(standDown.message, new RegExp(`its Lease ${FLUO_NS}/${lock} is held by fluo-operator-0`));
    // It keeps standing down through many looks (one a second) and renewals: no node of the pool touched.
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      assert.equal((await blocked())?.reason, 'ForeignOperator', 'still standing down');
      assert.deepEqual(
        (await touched()).map((n) => n.metadata?.name),
        [],
        'no node of the pool touched while FLUO runs',
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
    }

    clearInterval(renewing);
    await coordination.deleteNamespacedLease({ name: lock, namespace: FLUO_NS });
    await pollUntil('nuo to take the pool once the Lease is gone', async () => {
      const c = await blocked();
      return c?.reason !== 'ForeignOperator' && (await touched()).length > 0 ? true : undefined;
    });
  } finally {
    clearInterval(renewing);
  }
});
