/**
 * Plans on the real control plane: SUC-style upgrade Jobs under the same budget as reboots. Each test
 * runs a fleet of simulated hosts, a real `nuo operator` and the independent checker (which counts a
 * Plan's attempts and its concurrency); Job pods complete or fail through KWOK's stages, and a pod may
 * reboot its host as SUC's kernel example does.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, afterEach, before, describe, test } from 'node:test';
import { BatchV1Api, CoreV1Api, CustomObjectsApi, type V1Node } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { Annotations, JobLabels, LEDGER, planKey, planLabel } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { Plan, PlanSpec } from '../../src/api/plan.ts';
import { ResilientInformer } from '../../src/kube/informer.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import type { Budget } from '../../src/sim/checker.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { SimJobAnnotations, SimJobLabels } from '../../src/sim/job-keys.ts';
import { K3sUpgradeImage } from '../../src/sim/k3s-upgrade.ts';
import {
  ChannelServer,
  deletePlan,
  ensureNamespace,
  type PlanObject,
  readPlan,
} from '../../src/sim/plans.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { eventsAbout, eventsMark, operatorUnder, resetNodes, runNuo, useCluster } from './support.ts';

const NODES = 8;
const cluster = await useCluster({ nodes: NODES });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const batch = cluster.kubeconfig.makeApiClient(BatchV1Api);
const NS = 'ops';
const names = Array.from({ length: NODES }, (_, i) => `node-${i}`);

let fleet: Fleet | undefined;
after(() => fleet?.stop());

before(async () => {
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
  await ensureNamespace(cluster, NS);
});

/** Labels the tests put on nodes, removed after each with the Plans' own. */
const TEST_LABELS = ['k3s-upgrade', 'node-role.kubernetes.io/control-plane'];

afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
  for (const p of await listPlans()) await deletePlan(cluster, p.metadata.namespace, p.metadata.name);
  // Owned by their Plans: the garbage collector deletes them.
  await pollUntil(
    'the Plans’ Jobs to be gone',
    async () =>
      (await batch.listJobForAllNamespaces({ labelSelector: JobLabels.plan })).items.length === 0
        ? true
        : undefined,
    { timeoutMs: 120_000 },
  );
  await resetNodes(core);
  // The Plans' labels, so the next test starts from nodes that applied nothing.
  for (const n of (await core.listNode()).items) {
    const labels = Object.keys(n.metadata?.labels ?? {}).filter(
      (k) => k.startsWith('plan.nuo.dev/') || TEST_LABELS.includes(k),
    );
    if (labels.length === 0) continue;
    await core.patchNode(
      {
        name: n.metadata?.name ?? '',
        body: { metadata: { labels: Object.fromEntries(labels.map((k) => [k, null])) } },
      },
      mergePatch,
    );
  }
});

/** Every Plan, in every namespace. */
async function listPlans(): Promise<Plan[]> {
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  return (
    (await custom
      .listClusterCustomObject({ group: 'nuo.dev', version: 'v1alpha1', plural: 'plans' })
      .catch(() => ({ items: [] }))) as { items: Plan[] }
  ).items;
}

const upgrade = { image: 'registry.example/os-upgrade', command: ['/upgrade'] };

/** A Plan over every node of the fleet, its pods running `runSeconds` each before they complete. */
function planOf(
  name: string,
  spec: Partial<PlanSpec>,
  runSeconds = 1,
  labels: Record<string, string> = {},
): PlanObject {
  return {
    namespace: NS,
    name,
    labels,
    annotations: {
      [SimJobAnnotations.completeDelay]: `${runSeconds}s`,
      [SimJobAnnotations.failDelay]: `${runSeconds}s`,
    },
    spec: { concurrency: 1, version: 'v1', upgrade, ...spec } as PlanSpec,
  };
}

async function startFleet(budget: number | Budget[], plans: { name: string; max: number }[] = []) {
  fleet = new Fleet(cluster, { rebootMs: 1000, budget, plans, agentCheckIntervalMs: 1000 });
  await fleet.start();
  return fleet;
}

const nodesNow = async () => (await core.listNode()).items;
const hashOf = async (name: string) => (await readPlan(cluster, NS, name)).status?.latestHash;

/** Waits until every node in `nodes` carries the Plan's latest hash and is back to Idle. */
async function applied(plan: string, nodes: readonly string[], timeoutMs: number): Promise<string> {
  let hash: string | undefined;
  await pollUntil(
    `Plan ${plan} applied on ${nodes.join(', ')}`,
    async () => {
      hash = await hashOf(plan);
      if (!hash) return undefined;
      const all = await nodesNow();
      const done = nodes.every((name) => {
        const n = all.find((x) => x.metadata?.name === name);
        const state = n?.metadata?.annotations?.[Annotations.state] ?? Phase.idle;
        return n?.metadata?.labels?.[planLabel(plan)] === hash && state === Phase.idle;
      });
      return done ? true : undefined;
    },
    { timeoutMs, intervalMs: 250 },
  );
  return hash as string;
}

async function checked(f: Fleet) {
  await f.checker.finalCheck();
  assert.deepEqual(f.checker.violations, [], 'the checker saw no violation');
}

const label = (n: V1Node | undefined, plan: string) => n?.metadata?.labels?.[planLabel(plan)];

describe('Plans', () => {
  test('a Plan over 8 nodes, concurrency 2, under a pool budget of 3 while reboots are pending: never more than 3 disrupted, nor 2 of the Plan', async () => {
    const f = await startFleet(3, [{ name: `${NS}/os`, max: 2 }]);
    await operatorUnder(f, 'op-a', { maxUnavailable: 3 }, ['--plan-polling-interval=1s']);
    f.stageUpdates(['node-1', 'node-4', 'node-6']);
    await f.applyPlan(
      planOf(
        'os',
        {
          concurrency: 2,
          drain: { force: true },
          postCompleteLabels: { 'example.com/os': '$(LATEST_VERSION)' },
        },
        2,
      ),
    );
    const hash = await applied('os', names, 240_000);
    await pollUntil('the staged reboots done', async () =>
      (await nodesNow()).every((n) => n.metadata?.annotations?.[Annotations.rebootNeeded] !== 'true')
        ? true
        : undefined,
    );
    await checked(f);
    assert.ok(f.checker.maxDisrupted <= 3, `at most 3 disrupted: ${f.checker.maxDisrupted}`);
    assert.equal(f.checker.maxDisrupted, 3, 'the Plan and the reboots shared the budget, filling it');
    for (const n of await nodesNow()) {
      assert.equal(label(n, 'os'), hash);
      assert.equal(n.metadata?.labels?.['example.com/os'], 'v1', 'postCompleteLabels, expanded');
      assert.notEqual(n.spec?.unschedulable, true, `${n.metadata?.name} uncordoned`);
    }
    const status = (await readPlan(cluster, NS, 'os')).status;
    assert.equal(status?.complete, NODES);
    assert.deepEqual(status?.applying, []);
    assert.equal(status?.conditions?.find((c) => c.type === 'Complete')?.status, 'True');
    assert.equal(status?.latestVersion, 'v1');
    const jobs = (await batch.listNamespacedJob({ namespace: NS })).items;
    assert.equal(jobs.length, NODES, 'one Job per node');
    assert.ok(
      jobs.every((j) => j.spec?.template.spec?.containers[0]?.image === 'registry.example/os-upgrade:v1'),
    );
  });

  test('a Plan edited mid-rollout, and its channel moving on: every node ends at the new hash, the attempts in progress finish first', async () => {
    const f = await startFleet(2, [{ name: `${NS}/edit`, max: 1 }]);
    await operatorUnder(f, 'op-a', { maxUnavailable: 2 }, ['--plan-polling-interval=1s']);
    const channel = new ChannelServer('v1.0.0');
    await channel.start();
    try {
      const four = names.slice(0, 4);
      await f.applyPlan(planOf('edit', { version: undefined, channel: channel.url }, 2));
      await pollUntil('the first node applied at v1.0.0', async () =>
        (await nodesNow()).some((n) => label(n, 'edit') !== undefined) ? true : undefined,
      );
      const first = await hashOf('edit');
      assert.equal((await readPlan(cluster, NS, 'edit')).status?.latestVersion, 'v1.0.0');
      channel.version = 'v1.1.0';
      await pollUntil('the channel’s new version resolved', async () =>
        (await readPlan(cluster, NS, 'edit')).status?.latestVersion === 'v1.1.0' ? true : undefined,
      );
      const second = await applied('edit', names, 240_000);
      assert.notEqual(second, first, 'a new version is a new hash');
      // An edit of the spec itself (a new argument) is a new hash too, applied to every node again.
      const edited = planOf('edit', {}, 1);
      edited.spec = {
        ...edited.spec,
        version: undefined,
        channel: channel.url,
        upgrade: { ...upgrade, args: ['--now'] },
      } as PlanSpec;
      await f.applyPlan(edited);
      // Until the operator resolves the edit, the status names the last hash, which every node has.
      await pollUntil('the edit resolved to a new hash', async () =>
        (await hashOf('edit')) !== second ? true : undefined,
      );
      const third = await applied('edit', four.concat(names.slice(4)), 240_000);
      assert.notEqual(third, second);
      await checked(f);
      const jobs = (await batch.listNamespacedJob({ namespace: NS })).items;
      const hashes = new Set(jobs.map((j) => j.metadata?.labels?.[JobLabels.hash]));
      assert.ok(hashes.has(second) && hashes.has(third), 'Jobs ran at both later hashes');
      assert.ok(
        jobs
          .filter((j) => j.metadata?.labels?.[JobLabels.hash] === third)
          .every((j) => j.spec?.template.spec?.containers[0]?.image === 'registry.example/os-upgrade:v1.1.0'),
        'the image tagged with the channel’s version',
      );
      assert.ok(channel.requests >= 2, 'the channel was polled');
    } finally {
      await channel.stop();
    }
  });

  test('a changed secret is a new hash: the Plan applies again on every node; ignoreUpdates secrets are not hashed', async () => {
    const f = await startFleet(2, [{ name: `${NS}/keyed`, max: 2 }]);
    await operatorUnder(f, 'op-a', { maxUnavailable: 2 }, ['--plan-polling-interval=1s']);
    const secret = (v: string) => ({
      metadata: { name: 'os-config', namespace: NS },
      stringData: { version: v },
    });
    await core.createNamespacedSecret({ namespace: NS, body: secret('1') });
    try {
      const spec = {
        concurrency: 2,
        secrets: [
          { name: 'os-config', path: '/host/run/os' },
          { name: 'absent', ignoreUpdates: true },
        ],
      };
      await f.applyPlan(planOf('keyed', spec));
      const first = await applied('keyed', names, 240_000);
      await core.replaceNamespacedSecret({ name: 'os-config', namespace: NS, body: secret('2') });
      await pollUntil('the new secret hashed', async () =>
        (await hashOf('keyed')) !== first ? true : undefined,
      );
      const second = await applied('keyed', names, 240_000);
      assert.notEqual(second, first);
      await checked(f);
      const job = (await batch.listNamespacedJob({ namespace: NS })).items[0];
      const mounts = job?.spec?.template.spec?.containers[0]?.volumeMounts?.map((m) => m.mountPath) ?? [];
      assert.ok(mounts.includes('/host/run/os'), `the secret is mounted where the Plan says: ${mounts}`);
    } finally {
      await core.deleteNamespacedSecret({ name: 'os-config', namespace: NS }).catch(() => {});
    }
  });

  test('a Plan deleted mid-rollout ends its attempts cleanly: its Jobs deleted, nuo’s cordons undone, slots freed, no failure counted', async () => {
    const f = await startFleet(3, [{ name: `${NS}/doomed`, max: 2 }]);
    await operatorUnder(f, 'op-a', { maxUnavailable: 3 }, ['--plan-polling-interval=1s']);
    // An admin's cordon on node-7 stays (nuo undoes only its own); the checker holds nuo to that.
    f.checker.adminCordon('node-7');
    await core.patchNode({ name: 'node-7', body: { spec: { unschedulable: true } } }, mergePatch);
    await f.applyPlan(planOf('doomed', { concurrency: 2, drain: { force: true } }, 600));
    await pollUntil('two Jobs running', async () => {
      const jobs = (await batch.listNamespacedJob({ namespace: NS })).items;
      return jobs.filter((j) => (j.status?.active ?? 0) > 0).length === 2 ? true : undefined;
    });
    await deletePlan(cluster, NS, 'doomed');
    await pollUntil('the attempts ended', async () => {
      const jobs = (await batch.listNamespacedJob({ namespace: NS })).items;
      const pods = (await core.listNamespacedPod({ namespace: NS })).items;
      const cm = await core.readNamespacedConfigMap({ name: LEDGER.name, namespace: 'nuo-system' });
      const slots = Object.keys(JSON.parse(cm.data?.[LEDGER.key] ?? '{"slots":{}}').slots);
      const busy = (await nodesNow()).filter((n) => {
        const a = n.metadata?.annotations ?? {};
        return (a[Annotations.state] ?? Phase.idle) !== Phase.idle || a[Annotations.cordonedByNuo] === 'true';
      });
      return jobs.length + pods.length + slots.length + busy.length === 0 ? true : undefined;
    });
    for (const n of await nodesNow()) {
      assert.equal(n.metadata?.annotations?.[Annotations.failures], undefined, 'no failure counted');
      assert.equal(label(n, 'doomed'), undefined);
      assert.equal(
        n.spec?.unschedulable === true,
        n.metadata?.name === 'node-7',
        `${n.metadata?.name}: only the admin's cordon stands`,
      );
    }
    await checked(f);
    f.checker.adminUncordon('node-7');
    await core.patchNode({ name: 'node-7', body: { spec: { unschedulable: false } } }, mergePatch);
  });

  test('a failed Job ends the attempt (cordon undone, the reason on the node, the Plan’s status and Events), and the node is retried after its backoff', async () => {
    const f = await startFleet(1, [{ name: `${NS}/flaky`, max: 1 }]);
    await operatorUnder(
      f,
      'op-a',
      {
        maxUnavailable: 1,
        nodeSelector: { matchLabels: { 'kubernetes.io/hostname': 'node-0' } },
        reboot: { retryBackoff: '3s' },
      },
      ['--plan-polling-interval=1s'],
    );
    const mark = await eventsMark(core);
    const failing = planOf(
      'flaky',
      { cordon: true, nodeSelector: { matchLabels: { 'kubernetes.io/hostname': 'node-0' } } },
      1,
      {
        [SimJobLabels.outcome]: 'fail',
      },
    );
    failing.annotations = { ...failing.annotations, [SimJobAnnotations.failMessage]: 'disk full' };
    await f.applyPlan(failing);
    // The Job's backoffLimit (2) lets its pod fail three times, 10 s and 20 s apart, before it fails.
    await pollUntil(
      'the failure recorded in the Plan’s status',
      async () => {
        const s = (await readPlan(cluster, NS, 'flaky')).status;
        return s?.failed?.some((x) => x.node === 'node-0' && /disk full|BackoffLimitExceeded/.test(x.error))
          ? s
          : undefined;
      },
      { timeoutMs: 120_000 },
    );
    const node0 = (await nodesNow()).find((n) => n.metadata?.name === 'node-0');
    assert.ok(Number(node0?.metadata?.annotations?.[Annotations.failures] ?? 0) >= 1, 'a failure counted');
    assert.notEqual(node0?.metadata?.annotations?.[Annotations.cordonedByNuo], 'true');
    const complete = (await readPlan(cluster, NS, 'flaky')).status?.conditions?.find(
      (c) => c.type === 'Complete',
    );
    assert.equal(complete?.reason, 'JobFailed');
    await eventsAbout(core, 'Plan', 'flaky', ['JobFailed'], mark, NS);
    const nodeEvents = await eventsAbout(core, 'Node', 'node-0', ['AttemptAborted'], mark);
    assert.ok(nodeEvents.some((e) => /Job .* failed/.test(e.message ?? '')));
    const shown = await runNuo(cluster, 'plan', 'flaky');
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /failed on node-0/);
    assert.match(shown.stdout, /node-0 +no/);
    // Fixed (the Plan's own labels are not in its hash): the retry after the backoff succeeds.
    await f.applyPlan(
      planOf('flaky', {
        cordon: true,
        nodeSelector: { matchLabels: { 'kubernetes.io/hostname': 'node-0' } },
      }),
    );
    await applied('flaky', ['node-0'], 120_000);
    await checked(f);
    const status = await runNuo(cluster, 'status');
    assert.match(status.stdout, /ops\/flaky: version v1;.*complete/);
  });

  test('reboot: true upgrades and reboots each node in one attempt, through the health gate, with the pending reboot served too', async () => {
    const nodes = ['node-0', 'node-1', 'node-2'];
    const sel = {
      matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In' as const, values: nodes }],
    };
    const f = await startFleet(2, [{ name: `${NS}/kernel`, max: 1 }]);
    await operatorUnder(f, 'op-a', { maxUnavailable: 2 }, ['--plan-polling-interval=1s']);
    f.stageUpdates(['node-1']);
    const boots = new Map((await nodesNow()).map((n) => [n.metadata?.name, n.status?.nodeInfo?.bootID]));
    await f.applyPlan(planOf('kernel', { reboot: true, nodeSelector: sel }));
    await applied('kernel', nodes, 180_000);
    await checked(f);
    for (const n of await nodesNow()) {
      const name = n.metadata?.name ?? '';
      if (!nodes.includes(name)) continue;
      assert.notEqual(n.status?.nodeInfo?.bootID, boots.get(name), `${name} rebooted`);
      assert.equal(f.checker.planRebootsOf(name), 0, `${name}: nuo's reboot, granted, not the Job's`);
    }
    const node1 = (await nodesNow()).find((n) => n.metadata?.name === 'node-1');
    assert.notEqual(
      node1?.metadata?.annotations?.[Annotations.rebootNeeded],
      'true',
      'the Plan’s reboot served the staged update',
    );
  });

  test('a Job that reboots the node itself is recognised by the new boot and passes the health gate, not counted as a failure', async () => {
    const nodes = ['node-3', 'node-4'];
    const sel = {
      matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In' as const, values: nodes }],
    };
    const f = await startFleet(1, [{ name: `${NS}/self`, max: 1 }]);
    await operatorUnder(f, 'op-a', { maxUnavailable: 1 }, ['--plan-polling-interval=1s']);
    const boots = new Map((await nodesNow()).map((n) => [n.metadata?.name, n.status?.nodeInfo?.bootID]));
    await f.applyPlan(
      planOf('self', { drain: { force: true }, nodeSelector: sel }, 3, {
        [SimJobLabels.rebootsHost]: 'true',
      }),
    );
    await applied('self', nodes, 180_000);
    await checked(f);
    for (const name of nodes) {
      const n = (await nodesNow()).find((x) => x.metadata?.name === name);
      assert.notEqual(n?.status?.nodeInfo?.bootID, boots.get(name), `${name} rebooted`);
      assert.equal(f.checker.planRebootsOf(name), 1, `${name}: the Job's own reboot`);
      assert.equal(n?.metadata?.annotations?.[Annotations.failures], undefined, 'not a failure');
    }
  });

  test("a node opted out with SUC's label (or nuo's) is never touched while its peers are upgraded, and the Plan's status says so", async () => {
    const f = await startFleet(2, [{ name: `${NS}/os`, max: 2 }]);
    const out = { 'node-3': 'plan.upgrade.cattle.io/os', 'node-5': planLabel('os') };
    for (const [name, key] of Object.entries(out))
      await core.patchNode({ name, body: { metadata: { labels: { [key]: 'disabled' } } } }, mergePatch);
    // Whatever nuo does to a node shows on it: a phase, a cordon, its slot.
    const touched: string[] = [];
    const watch = new ResilientInformer<V1Node>({
      kubeconfig: cluster.kubeconfig,
      path: '/api/v1/nodes',
      list: (o) => core.listNode(o),
      name: 'opted-out',
    });
    watch.onEvent((_type, n) => {
      const name = n.metadata?.name ?? '';
      if (!(name in out)) return;
      const a = n.metadata?.annotations ?? {};
      if (n.spec?.unschedulable || a[Annotations.state] || a[Annotations.plan])
        touched.push(`${name}: ${a[Annotations.state]} ${a[Annotations.plan]} ${n.spec?.unschedulable}`);
    });
    await watch.start();
    try {
      await operatorUnder(f, 'op-a', { maxUnavailable: 2 }, ['--plan-polling-interval=1s']);
      await f.applyPlan(planOf('os', { concurrency: 2, cordon: true }));
      const peers = names.filter((n) => !(n in out));
      const hash = await applied('os', peers, 240_000);
      const status = await pollUntil('the Plan Complete without the opted-out nodes', async () => {
        const s = (await readPlan(cluster, NS, 'os')).status;
        return s?.conditions?.find((c) => c.type === 'Complete' && c.status === 'True') ? s : undefined;
      });
      assert.match(
        status.conditions?.find((c) => c.type === 'Complete')?.message ?? '',
        /applied on all 6 selected node\(s\).*2 node\(s\) opted out \(label plan.upgrade.cattle.io\/os or plan.nuo.dev\/os = disabled\)/,
      );
      assert.equal(status.complete, peers.length);
      await checked(f);
      assert.deepEqual(touched, [], 'nuo never touched an opted-out node');
      const jobs = (await batch.listNamespacedJob({ namespace: NS })).items;
      assert.deepEqual(
        jobs.map((j) => j.metadata?.labels?.[JobLabels.node]).sort(),
        peers,
        'a Job on every peer, none on an opted-out node',
      );
      const all = await nodesNow();
      for (const [name, key] of Object.entries(out)) {
        const n = all.find((x) => x.metadata?.name === name);
        assert.equal(n?.metadata?.labels?.[key], 'disabled', `${name}: the opt-out stands`);
        assert.notEqual(label(n, 'os'), hash, `${name}: not applied`);
      }
      const rows = await runNuo(cluster, 'plan', 'os');
      assert.equal(rows.code, 0, rows.stderr);
      assert.match(
        rows.stdout,
        /node-3\s+disabled\s+Idle\s+opted out \(label plan.upgrade.cattle.io\/os=disabled\)/,
      );
      assert.match(rows.stdout, /node-5\s+disabled\s+Idle\s+opted out \(label plan.nuo.dev\/os=disabled\)/);
    } finally {
      await watch.stop();
      for (const [name, key] of Object.entries(out))
        await core.patchNode({ name, body: { metadata: { labels: { [key]: null } } } }, mergePatch);
    }
  });

  test("SUC's k3s example, only apiVersion changed, in one pool of budget 1, the image's contract played: the agents' prepare waits for the servers holding no slot, so the servers go first, cordoned, then each agent, drained, once its prepare saw the servers' kubelets at the munged version", async () => {
    const SUC = 'system-upgrade';
    const CONTROL_PLANE = 'node-role.kubernetes.io/control-plane';
    // The servers last by name, so the agents come first in the admission order: a prepare that held the
    // only slot while it waited for the servers would stall the servers' Plan (until its Job's deadline).
    const servers = ['node-6', 'node-7'];
    const labelNode = async (name: string, labels: Record<string, string | null>) =>
      core.patchNode({ name, body: { metadata: { labels } } }, mergePatch);
    const f = await startFleet(1, [
      { name: `${SUC}/k3s-server`, max: 1 },
      { name: `${SUC}/k3s-agent`, max: 2 },
    ]);
    await ensureNamespace(cluster, SUC);
    // The example's Jobs run as this service account, which SUC's install (and so the user) creates.
    await core
      .createNamespacedServiceAccount({ namespace: SUC, body: { metadata: { name: SUC } } })
      .catch(() => {});
    for (const name of names)
      await labelNode(name, {
        'k3s-upgrade': 'true',
        ...(servers.includes(name) ? { [CONTROL_PLANE]: 'true' } : {}),
      });
    for (const name of names)
      await core.patchNodeStatus(
        { name, body: { status: { nodeInfo: { kubeletVersion: 'v1.19.15+k3s2' } } } },
        mergePatch,
      );
    const image = new K3sUpgradeImage(cluster, SUC);
    image.start();
    try {
      await operatorUnder(f, 'op-a', { maxUnavailable: 1 }, ['--plan-polling-interval=1s']);
      const file = new URL('../fixtures/suc-examples/k3s-upgrade.yaml', import.meta.url);
      for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
        const p = doc.toJS() as Plan;
        await f.applyPlan({
          namespace: p.metadata.namespace,
          name: p.metadata.name,
          spec: p.spec,
          labels: p.metadata.labels ?? {},
          // The pods run until the image's contract (K3sUpgradeImage) completes them.
          annotations: { [SimJobAnnotations.completeDelay]: '1h' },
        });
      }
      const done = async (plan: string, nodes: string[]) => {
        const hash = await pollUntil(
          `${plan} resolved`,
          async () => (await readPlan(cluster, SUC, plan)).status?.latestHash,
        );
        await pollUntil(
          `${plan} applied on ${nodes.join(', ')}`,
          async () => {
            const all = await nodesNow();
            return nodes.every((name) => {
              const n = all.find((x) => x.metadata?.name === name);
              return (
                label(n, plan) === hash &&
                (n?.metadata?.annotations?.[Annotations.state] ?? Phase.idle) === Phase.idle
              );
            })
              ? true
              : undefined;
          },
          { timeoutMs: 240_000, intervalMs: 250 },
        ).catch(async (err: Error) => {
          const states = (await nodesNow())
            .filter((n) => nodes.includes(n.metadata?.name ?? ''))
            .map((n) => {
              const a = n.metadata?.annotations ?? {};
              return `${n.metadata?.name}: ${a[Annotations.state] ?? 'Idle'} (${a[Annotations.stateReason] ?? ''}) label ${label(n, plan)}`;
            });
          const jobs = (await batch.listNamespacedJob({ namespace: SUC })).items.map(
            (j) => `${j.metadata?.name}: ${JSON.stringify(j.status?.conditions?.map((c) => c.type) ?? [])}`,
          );
          throw new Error(
            `${err.message}; prepare waits: ${JSON.stringify([...image.waiting])}; last error: ${image.lastError}; nodes: ${states.join(' | ')}; Jobs: ${jobs.join(' | ')}`,
          );
        });
      };
      const agents = names.filter((n) => !servers.includes(n));
      await done('k3s-server', servers);
      await done('k3s-agent', agents);
      await checked(f);
      assert.equal((await readPlan(cluster, SUC, 'k3s-agent')).status?.latestVersion, 'v1.20.11-k3s1');
      // The image's contract: each agent's prepare was given the servers' kubelet version, '+' as '-'.
      assert.deepEqual(image.prepared.map((p) => p.node).sort(), agents, 'every agent prepared once');
      for (const p of image.prepared) {
        assert.equal(p.given, 'v1.20.11-k3s1', `${p.node}: SYSTEM_UPGRADE_PLAN_LATEST_VERSION`);
        assert.deepEqual(p.servers, ['v1.20.11+k3s1', 'v1.20.11+k3s1'], `${p.node}: the servers upgraded`);
      }
      // Each agent's attempt began only once its prepare had succeeded: its prepare Job finished first.
      const all = (await batch.listNamespacedJob({ namespace: SUC })).items;
      const prepares = all.filter((j) => j.metadata?.labels?.[JobLabels.stage] === 'prepare');
      const jobs = all.filter((j) => j.metadata?.labels?.[JobLabels.stage] === undefined);
      assert.deepEqual(
        prepares.map((j) => j.metadata?.labels?.[JobLabels.node]).sort(),
        agents,
        'one prepare Job per agent',
      );
      for (const p of prepares) {
        const node = p.metadata?.labels?.[JobLabels.node];
        const attempt = jobs.find((j) => j.metadata?.labels?.[JobLabels.node] === node);
        const finished = p.status?.completionTime?.getTime() ?? Number.NaN;
        assert.ok(
          finished <= (attempt?.metadata?.creationTimestamp?.getTime() ?? Number.NaN),
          `${node}: its prepare finished before its attempt's Job was created`,
        );
        assert.deepEqual(
          p.spec?.template.spec?.containers.map((c) => [c.name, c.args?.join(' ')]),
          [['prepare', 'prepare k3s-server']],
        );
      }
      assert.equal(jobs.length, NODES, 'one Job per node, of its own Plan');
      for (const j of jobs) {
        const pod = j.spec?.template.spec;
        assert.equal(pod?.serviceAccountName, SUC);
        assert.equal(pod?.containers[0]?.image, 'rancher/k3s-upgrade:v1.20.11-k3s1', 'the resolved tag');
        const env = Object.fromEntries((pod?.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
        assert.equal(env.SYSTEM_UPGRADE_PLAN_LATEST_VERSION, 'v1.20.11-k3s1');
        assert.equal(env.NUO_PLAN_VERSION, 'v1.20.11-k3s1');
        assert.equal(pod?.initContainers, undefined, 'the prepare ran in its own Job, before');
      }
      for (const n of await nodesNow()) {
        assert.notEqual(n.spec?.unschedulable, true, `${n.metadata?.name} uncordoned`);
        assert.equal(n.status?.nodeInfo?.kubeletVersion, 'v1.20.11+k3s1', `${n.metadata?.name} upgraded`);
      }
    } finally {
      await image.stop();
    }
  });

  test("concurrency 0, SUC's meaning: the Plan starts on no node, its nodes and its status say so; raised to 1, it runs", async () => {
    const f = await startFleet(2, [{ name: `${NS}/zero`, max: 1 }]);
    await operatorUnder(f, 'op-a', { maxUnavailable: 2 }, ['--plan-polling-interval=1s']);
    await f.applyPlan(planOf('zero', { concurrency: 0, cordon: true }));
    const status = await pollUntil('the Plan says it starts on no node', async () => {
      const s = (await readPlan(cluster, NS, 'zero')).status;
      const complete = s?.conditions?.find((c) => c.type === 'Complete');
      return /concurrency 0: the Plan starts on no node/.test(complete?.message ?? '') ? s : undefined;
    });
    assert.deepEqual(status.applying, []);
    await pollUntil('every node says why it waits', async () =>
      (await nodesNow()).every((n) =>
        /Plan ops\/zero has concurrency 0: it starts on no node/.test(
          n.metadata?.annotations?.[Annotations.stateReason] ?? '',
        ),
      )
        ? true
        : undefined,
    );
    const jobs = await batch.listNamespacedJob({ namespace: NS, labelSelector: JobLabels.plan });
    assert.equal(jobs.items.length, 0, 'no Job');
    assert.ok(
      (await nodesNow()).every((n) => n.spec?.unschedulable !== true),
      'no cordon',
    );
    await f.applyPlan(planOf('zero', { concurrency: 1, cordon: true }));
    await applied('zero', names, 240_000);
    await checked(f);
  });

  test('a Plan named past 63 characters runs: its node label and Job labels shortened as SUC shortens names', async () => {
    const name = `kernel-${'x'.repeat(80)}`;
    const f = await startFleet(2, [{ name: `${NS}/${name}`, max: 2 }]);
    await operatorUnder(f, 'op-a', { maxUnavailable: 2 }, ['--plan-polling-interval=1s']);
    await f.applyPlan(planOf(name, { concurrency: 2, cordon: true }));
    const hash = await applied(name, names, 240_000);
    await checked(f);
    const most = f.checker.maxOfPlan.get(`${NS}/${name}`) ?? 0;
    assert.ok(most >= 1 && most <= 2, `the checker attributed the Jobs' pods to the Plan: ${most} at most`);
    for (const n of await nodesNow())
      assert.equal(n.metadata?.labels?.[`plan.nuo.dev/${planKey(name)}`], hash, `${n.metadata?.name}`);
    const status = (await readPlan(cluster, NS, name)).status;
    assert.equal(status?.complete, NODES);
    assert.equal(status?.conditions?.find((c) => c.type === 'Complete')?.status, 'True');
  });

  test('a Plan the API server cannot refuse but nuo can (a selector without values, a name another namespace took) is reported Validated=False and starts nothing', async () => {
    const f = await startFleet(1);
    await operatorUnder(f, 'op-a', { maxUnavailable: 1 }, ['--plan-polling-interval=1s']);
    await f.applyPlan(
      planOf('bad', { nodeSelector: { matchExpressions: [{ key: 'role', operator: 'In' }] } }),
    );
    await f.applyPlan(planOf('twin', {}));
    await ensureNamespace(cluster, 'other');
    await f.applyPlan({ ...planOf('twin', {}), namespace: 'other' });
    for (const [ns, name, why] of [
      [NS, 'bad', /nodeSelector.*In needs at least one value/],
      ['other', 'twin', /Plan ops\/twin has this name/],
    ] as const) {
      const status = await pollUntil(`${ns}/${name} reported invalid`, async () => {
        const s = (await readPlan(cluster, ns, name)).status;
        return s?.conditions?.find((c) => c.type === 'Validated' && c.status === 'False') ? s : undefined;
      });
      assert.match(status.conditions?.find((c) => c.type === 'Validated')?.message ?? '', why);
    }
    await applied('twin', names, 240_000);
    const jobs = await batch.listJobForAllNamespaces({ labelSelector: JobLabels.plan });
    assert.deepEqual(
      [...new Set(jobs.items.map((j) => `${j.metadata?.namespace}/${j.metadata?.labels?.[JobLabels.plan]}`))],
      [`${NS}/twin`],
      'only the valid Plan ran Jobs',
    );
    await deletePlan(cluster, 'other', 'twin');
    await checked(f);
  });
});
