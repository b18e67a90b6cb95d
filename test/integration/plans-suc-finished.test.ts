/**
 * SUC's finished nodes on the real control plane: SUC's own example Plans (test/fixtures/suc-examples,
 * only apiVersion changed) meet nodes SUC already upgraded — labelled plan.upgrade.cattle.io/<plan> with
 * SUC's hash of the same Plan — and nodes SUC upgraded at an older hash. A real `nuo operator` with its
 * fleet and the independent checker: the first are never touched, the second are upgraded. Then SUC's own
 * Plan in SUC's own group, under SUC's own CRD (test/fixtures/suc-crd), adopted in place: nuo leaves it
 * alone while a system-upgrade-controller Deployment wants replicas, and runs it once that is scaled to
 * zero, recording completion in SUC's label at SUC's hash.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type V1Node,
  type V1Secret,
} from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { Annotations, JobLabels, planLabel, sucPlanLabel } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { Plan } from '../../src/api/plan.ts';
import { ResilientInformer } from '../../src/kube/informer.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import { sucPlanHash } from '../../src/plan/suc-hash.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { SimJobAnnotations } from '../../src/sim/job-keys.ts';
import { ensureNamespace, readPlan } from '../../src/sim/plans.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { SUC_SHIPPED_CONTROLLER_ENV } from '../fixtures/suc-controller-env.ts';
import { eventsAbout, operatorUnder, runNuo, useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 4 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const batch = cluster.kubeconfig.makeApiClient(BatchV1Api);
const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
const SUC = 'system-upgrade';
const SUC_PLAN = { group: 'upgrade.cattle.io', version: 'v1', plural: 'plans' };

let fleet: Fleet | undefined;
after(() => fleet?.stop());

const kubectl = (args: string[], input?: string) =>
  spawnSync(cluster.binaries.path.kubectl, [`--kubeconfig=${cluster.kubeconfigPath}`, ...args], {
    encoding: 'utf8',
    ...(input === undefined ? {} : { input }),
  });

/** SUC's own CRD, as SUC's controller registers it, served before the operator starts. */
before(async () => {
  const crd = fileURLToPath(new URL('../fixtures/suc-crd/upgrade.cattle.io_plans.yaml', import.meta.url));
  const applied = kubectl(['apply', '-f', crd]);
  assert.equal(applied.status, 0, applied.stderr);
  await pollUntil("SUC's Plans to be served", () =>
    custom.listClusterCustomObject(SUC_PLAN).then(
      () => true,
      () => undefined,
    ),
  );
});

/** The example's Secrets (created as written) and Plans, in file order. */
function example(file: string): { secrets: V1Secret[]; plans: Plan[] } {
  const docs = parseAllDocuments(
    readFileSync(new URL(`../fixtures/suc-examples/${file}`, import.meta.url), 'utf8'),
  ).map((d) => d.toJS() as { kind: string });
  return {
    secrets: docs.filter((d) => d.kind === 'Secret') as V1Secret[],
    plans: docs.filter((d) => d.kind === 'Plan') as Plan[],
  };
}

const labelsOf = (all: V1Node[], name: string) =>
  all.find((n) => n.metadata?.name === name)?.metadata?.labels ?? {};

test("SUC's example Plans: nodes at SUC's hash of the Plan are never upgraded again, nodes at an older SUC hash are, and nuo says which SUC applied", async () => {
  const bionic = example('ubuntu-bionic.yaml');
  const kernel = example('ubuntu-bionic-linux-kernel-aws.yaml');
  await ensureNamespace(cluster, 'nuo-system');
  await ensureNamespace(cluster, SUC);
  await core.createNamespacedServiceAccount({ namespace: SUC, body: { metadata: { name: SUC } } });
  const stored: Record<string, V1Secret> = {};
  for (const s of [...bionic.secrets, ...kernel.secrets]) {
    const created = await core.createNamespacedSecret({ namespace: SUC, body: s });
    stored[created.metadata?.name ?? ''] = created;
  }
  // SUC's hash of each Plan as SUC computed it from the Secrets as stored (type, base64 data).
  const sucHash = (p: Plan, version: string) =>
    sucPlanHash({
      plan: p,
      version,
      secrets: Object.fromEntries(
        Object.entries(stored).map(([name, s]) => [
          name,
          { name, ...(s.type ? { type: s.type } : {}), ...(s.data ? { data: s.data } : {}) },
        ]),
      ),
    });
  const [bionicPlan] = bionic.plans;
  const [kernelPlan] = kernel.plans;
  assert.ok(bionicPlan && kernelPlan, 'each example has its Plan');
  const current = { bionic: sucHash(bionicPlan, 'bionic'), kernel: sucHash(kernelPlan, 'bionic') };
  // What SUC wrote when the Plans named an older version.
  const older = { bionic: sucHash(bionicPlan, 'artful'), kernel: sucHash(kernelPlan, 'artful') };
  const suc = (plan: 'bionic' | 'kernel', hash: string) => ({ [sucPlanLabel(plan)]: hash });
  const finished: Record<string, Record<string, string>> = {
    'node-0': { ...suc('bionic', current.bionic), ...suc('kernel', current.kernel) },
    'node-1': suc('bionic', current.bionic),
  };
  const behind: Record<string, Record<string, string>> = {
    'node-2': suc('bionic', older.bionic),
    'node-3': suc('kernel', older.kernel),
  };
  for (const [name, labels] of Object.entries({ ...finished, ...behind }))
    await core.patchNode({ name, body: { metadata: { labels } } }, mergePatch);

  // Whatever nuo does to a node shows on it: a phase, a cordon, its slot.
  const touched: string[] = [];
  const watch = new ResilientInformer<V1Node>({
    kubeconfig: cluster.kubeconfig,
    path: '/api/v1/nodes',
    list: (o) => core.listNode(o),
    name: 'suc-finished',
  });
  watch.onEvent((_type, n) => {
    const name = n.metadata?.name ?? '';
    if (!(name in finished)) return;
    const a = n.metadata?.annotations ?? {};
    if (n.spec?.unschedulable || a[Annotations.state] || a[Annotations.plan])
      touched.push(`${name}: ${a[Annotations.state]} ${a[Annotations.plan]} ${n.spec?.unschedulable}`);
  });
  await watch.start();
  try {
    fleet = new Fleet(cluster, {
      rebootMs: 1000,
      budget: 2,
      plans: [
        { name: `${SUC}/bionic`, max: 2 },
        { name: `${SUC}/kernel`, max: 1 },
        { name: `${SUC}/microos`, max: 2 },
      ],
      agentCheckIntervalMs: 1000,
    });
    await fleet.start();
    await operatorUnder(fleet, 'op-a', { maxUnavailable: 2 }, [
      '--plan-polling-interval=1s',
      `--suc-plans-namespace=${SUC}`,
      '--blocker-interval=1s',
    ]);
    for (const p of [bionicPlan, kernelPlan])
      await fleet.applyPlan({
        namespace: p.metadata.namespace,
        name: p.metadata.name,
        spec: p.spec,
        annotations: { [SimJobAnnotations.completeDelay]: '1s' },
      });

    const statusOf = async (plan: string) => (await readPlan(cluster, SUC, plan)).status;
    for (const plan of ['bionic', 'kernel'] as const) {
      const s = await pollUntil(`${plan}: SUC's hash resolved`, async () => {
        const st = await statusOf(plan);
        return st?.sucLatestHash ? st : undefined;
      });
      assert.equal(s.sucLatestHash, current[plan], `${plan}: the operator's SUC hash is the test's`);
    }
    const expectApplied: [plan: string, node: string][] = [
      ['bionic', 'node-2'],
      ['kernel', 'node-3'],
    ];
    const statuses = await pollUntil(
      'both Plans Complete',
      async () => {
        const all = (await core.listNode()).items;
        const done = await Promise.all(
          expectApplied.map(async ([plan, node]) => {
            const st = await statusOf(plan);
            const n = labelsOf(all, node);
            const idle =
              (all.find((x) => x.metadata?.name === node)?.metadata?.annotations?.[Annotations.state] ??
                Phase.idle) === Phase.idle;
            const complete = st?.conditions?.find((c) => c.type === 'Complete')?.status === 'True';
            return n[planLabel(plan)] === st?.latestHash && idle && complete ? st : undefined;
          }),
        );
        return done.every((d) => d !== undefined) ? done : undefined;
      },
      { timeoutMs: 240_000, intervalMs: 250 },
    );
    assert.match(
      statuses[0]?.conditions?.find((c) => c.type === 'Complete')?.message ?? '',
      /^applied on all 3 selected node\(s\) \(2 applied by system-upgrade-controller: label plan.upgrade.cattle.io\/bionic = SUC's hash [0-9a-f]{56}\)/,
    );
    assert.match(
      statuses[1]?.conditions?.find((c) => c.type === 'Complete')?.message ?? '',
      /^applied on all 2 selected node\(s\) \(1 applied by system-upgrade-controller/,
    );
    assert.equal(statuses[0]?.complete, 3);
    assert.equal(statuses[1]?.complete, 2);

    await fleet.checker.finalCheck();
    assert.deepEqual(fleet.checker.violations, [], 'the checker saw no violation');
    assert.deepEqual(touched, [], 'nuo never touched a node SUC had finished');
    const jobs = (await batch.listNamespacedJob({ namespace: SUC })).items;
    assert.deepEqual(
      jobs
        .map((j) => `${j.metadata?.labels?.[JobLabels.plan]} on ${j.metadata?.labels?.[JobLabels.node]}`)
        .sort(),
      ['bionic on node-2', 'kernel on node-3'],
      'a Job only where SUC was behind',
    );
    const all = (await core.listNode()).items;
    for (const [name, labels] of Object.entries(finished))
      for (const [key, value] of Object.entries(labels)) {
        assert.equal(labelsOf(all, name)[key], value, `${name}: SUC's label stands`);
        const plan = key.slice(key.indexOf('/') + 1);
        assert.equal(
          labelsOf(all, name)[planLabel(plan)],
          undefined,
          `${name}: no label of nuo's for ${plan}`,
        );
      }

    const rows = await runNuo(cluster, 'plan', 'bionic');
    assert.equal(rows.code, 0, rows.stderr);
    for (const name of ['node-0', 'node-1'])
      assert.match(
        rows.stdout,
        new RegExp(
          `${name}\\s+yes\\s+Idle\\s+applied by system-upgrade-controller \\(label plan.upgrade.cattle.io/bionic = SUC's hash of this Plan\\)`,
        ),
      );
    assert.match(rows.stdout, /node-2\s+yes\s+Idle\s+-/);
    assert.match(rows.stdout, new RegExp(`SUC's hash ${current.bionic}`));
  } finally {
    await watch.stop();
  }
});

test("SUC's own Plan applied unchanged in SUC's group: left alone while SUC's controller is deployed, then run by nuo on its nodes, recorded in SUC's label at SUC's hash", async () => {
  assert.ok(fleet, 'the fleet and operator of the test before');
  const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
  // SUC's example file as SUC publishes it: the fixture's one change undone.
  const text = readFileSync(
    new URL('../fixtures/suc-examples/openSUSE-microos.yaml', import.meta.url),
    'utf8',
  ).replaceAll('apiVersion: nuo.dev/v1alpha1', 'apiVersion: upgrade.cattle.io/v1');
  const [plan] = parseAllDocuments(text)
    .map((d) => d.toJS() as Plan)
    .filter((d) => d?.kind === 'Plan');
  assert.equal(plan?.apiVersion, 'upgrade.cattle.io/v1');
  const workers = ['node-2', 'node-3'];
  for (const name of workers)
    await core.patchNode(
      { name, body: { metadata: { labels: { 'node-role.kubernetes.io/worker': 'true' } } } },
      mergePatch,
    );
  // SUC's controller as its manifest deploys it; its pod need not run: the Deployment wanting it counts.
  const selector = { 'upgrade.cattle.io/controller': 'system-upgrade-controller' };
  await apps.createNamespacedDeployment({
    namespace: SUC,
    body: {
      metadata: { name: 'system-upgrade-controller' },
      spec: {
        replicas: 1,
        selector: { matchLabels: selector },
        template: {
          metadata: { labels: selector },
          spec: {
            nodeSelector: { 'nuo.test/nowhere': 'true' },
            containers: [{ name: 'system-upgrade-controller', image: 'rancher/system-upgrade-controller' }],
          },
        },
      },
    },
  });
  // The Plan comes once the operator has seen SUC: it looks every --blocker-interval, and a Plan applied
  // within a look of SUC's start could begin before it (the window decision 53 names).
  const log = join(cluster.dir, 'logs', 'operator-op-a.log');
  const seen = await pollUntil("the operator to see SUC's controller", () =>
    readFileSync(log, 'utf8')
      .split('\n')
      .find((l) => l.includes("nuo acts on no upgrade.cattle.io Plan while SUC's controller runs")),
  );
  assert.match(
    seen,
    /Deployment system-upgrade\/system-upgrade-controller wants 1 replica/,
    'the log line says why',
  );
  // SUC's controller-wide Job settings as its manifest ships them: its Plans' Jobs keep them in place.
  await core.createNamespacedConfigMap({
    namespace: SUC,
    body: {
      metadata: { name: 'default-controller-env' },
      data: { ...SUC_SHIPPED_CONTROLLER_ENV },
    },
  });
  const applied = kubectl(['apply', '-f', '-'], text);
  assert.equal(applied.status, 0, applied.stderr);

  const read = async () =>
    (await custom.getNamespacedCustomObject({ ...SUC_PLAN, namespace: SUC, name: 'microos' })) as Plan;
  const completeOf = (p: Plan) => p.status?.conditions?.find((c) => c.type === 'Complete');
  const held = await pollUntil('the SUC Plan says why nuo leaves it alone', async () => {
    const c = completeOf(await read());
    return c?.reason === 'ControllerRunning' ? c : undefined;
  });
  assert.match(
    held.message ?? '',
    /system-upgrade-controller is deployed: Deployment system-upgrade\/system-upgrade-controller wants 1 replica\(s\)\): scale it to zero/,
  );
  const microosJobs = async () =>
    (await batch.listNamespacedJob({ namespace: SUC, labelSelector: `${JobLabels.plan}=microos` })).items;
  assert.deepEqual(await microosJobs(), [], 'no Job while SUC runs');
  const before = (await core.listNode()).items;
  for (const name of workers) {
    const n = before.find((x) => x.metadata?.name === name);
    assert.equal(n?.spec?.unschedulable, undefined, `${name}: not cordoned while SUC runs`);
    assert.equal(n?.metadata?.annotations?.[Annotations.plan], undefined, `${name}: no attempt`);
  }

  await apps.patchNamespacedDeployment(
    { name: 'system-upgrade-controller', namespace: SUC, body: { spec: { replicas: 0 } } },
    mergePatch,
  );
  const secret = await core.readNamespacedSecret({ name: 'microos', namespace: SUC });
  const hash = sucPlanHash({
    plan,
    version: 'microos',
    secrets: {
      microos: {
        name: 'microos',
        ...(secret.type ? { type: secret.type } : {}),
        ...(secret.data ? { data: secret.data } : {}),
      },
    },
  });
  const done = await pollUntil(
    "nuo runs SUC's Plan on both workers once SUC is scaled to zero",
    async () => {
      const p = await read();
      const all = (await core.listNode()).items;
      const finished = workers.every((w) => {
        const n = all.find((x) => x.metadata?.name === w);
        return (
          labelsOf(all, w)[sucPlanLabel('microos')] === hash &&
          (n?.metadata?.annotations?.[Annotations.state] ?? Phase.idle) === Phase.idle
        );
      });
      return finished && completeOf(p)?.status === 'True' ? p : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 250 },
  );
  assert.equal(done.status?.latestHash, hash, "the status holds SUC's hash, in SUC's shape");
  assert.equal(done.status?.latestVersion, 'microos');
  assert.match(completeOf(done)?.message ?? '', /^applied on all 2 selected node\(s\) at version microos/);
  const jobs = await microosJobs();
  assert.deepEqual(jobs.map((j) => j.metadata?.labels?.[JobLabels.node]).sort(), workers);
  for (const j of jobs) {
    assert.equal(
      j.metadata?.ownerReferences?.[0]?.apiVersion,
      'upgrade.cattle.io/v1',
      'owned by the SUC Plan',
    );
    assert.equal(j.metadata?.ownerReferences?.[0]?.uid, done.metadata.uid);
    assert.equal(j.metadata?.labels?.[sucPlanLabel('microos')], hash, "SUC's label on the Job at SUC's hash");
    // SUC's default-controller-env, not SUC's code defaults (600 s, 2, IfNotPresent).
    assert.equal(j.spec?.activeDeadlineSeconds, 900, 'SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS');
    assert.equal(j.spec?.backoffLimit, 99, 'SYSTEM_UPGRADE_JOB_BACKOFF_LIMIT');
    assert.deepEqual(
      [...new Set(j.spec?.template.spec?.containers.map((c) => c.imagePullPolicy))],
      ['Always'],
      'SYSTEM_UPGRADE_JOB_IMAGE_PULL_POLICY',
    );
  }
  // As SUC writes its Plans: no message on a True Validated or LatestResolved, so SUC's MESSAGE column
  // (the first condition with one) shows nuo's progress.
  const byType = Object.fromEntries((done.status?.conditions ?? []).map((c) => [c.type, c]));
  assert.deepEqual([byType.Validated?.reason, byType.Validated?.message], ['PlanIsValid', '']);
  assert.deepEqual([byType.LatestResolved?.reason, byType.LatestResolved?.message], ['Version', '']);
  const table = kubectl(['get', 'plans.upgrade.cattle.io', 'microos', '-n', SUC]);
  assert.equal(table.status, 0, table.stderr);
  assert.match(table.stdout, /applied on all 2 selected node\(s\) at version microos/, 'the MESSAGE column');
  const all = (await core.listNode()).items;
  for (const w of workers)
    assert.equal(labelsOf(all, w)[planLabel('microos')], undefined, `${w}: no label of nuo's`);
  for (const w of ['node-0', 'node-1'])
    assert.equal(labelsOf(all, w)[sucPlanLabel('microos')], undefined, `${w}: not selected, not touched`);
  const rows = await runNuo(cluster, 'plan', 'microos', `--suc-plans-namespace=${SUC}`);
  assert.equal(rows.code, 0, rows.stderr);
  assert.match(
    rows.stdout,
    new RegExp(`^upgrade\\.cattle\\.io:${SUC}/microos: version microos, hash ${hash}`),
  );
  for (const w of workers) assert.match(rows.stdout, new RegExp(`${w}\\s+yes\\s+Idle\\s+-`));
  const unread = await runNuo(cluster, 'plan', 'microos');
  assert.match(
    unread.stderr,
    /Plan "microos" not found/,
    "without the setting the CLI reads nuo's group only",
  );
  // SUC's Events, each waited for: the Plan valid, its version resolved, its Jobs synced on the workers.
  const told = await eventsAbout(core, 'Plan', 'microos', ['Validated', 'Resolved', 'SyncJob'], '0', SUC);
  assert.ok(
    told.some(
      (e) => e.reason === 'Resolved' && e.message === 'Resolved latest version from Spec.Version: microos',
    ),
    told.map((e) => `${e.reason}: ${e.message}`).join(' | '),
  );
  const [event] = await eventsAbout(core, 'Plan', 'microos', ['Complete'], '0', SUC);
  assert.equal(event?.involvedObject.apiVersion, 'upgrade.cattle.io/v1', 'the Event is about the SUC Plan');
  assert.equal(event?.involvedObject.uid, done.metadata.uid);
  await fleet.checker.finalCheck();
  assert.deepEqual(fleet.checker.violations, [], 'the checker saw no violation');
});
