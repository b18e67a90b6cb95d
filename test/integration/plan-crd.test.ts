/**
 * The Plan CRD (deploy/base/plan-crd.yaml) on the real control plane: SUC's example Plans, with only
 * their apiVersion changed, are accepted as they are and read back as the types say, and so are they in
 * SUC's own group under SUC's own CRD (test/fixtures/suc-crd), where nuo finds them valid too; invalid
 * Plans are refused with a message that names the field and what is accepted; the Job built for one is
 * accepted.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BatchV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { Errors } from 'typebox/value';
import { parseAllDocuments } from 'yaml';
import { planKey } from '../../src/api/keys.ts';
import { type Plan, PlanSpec } from '../../src/api/plan.ts';
import { buildJob, buildPrepareJob } from '../../src/plan/job.ts';
import { validatePlan } from '../../src/plan/validate.ts';
import { mungeVersion } from '../../src/plan/version.ts';
import { installPlanCrd } from '../../src/sim/crds.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { EVERY_SECURITY_FIELD, PLAN_EVERY_FIELD } from '../fixtures/plan-every-field.ts';
import { useCluster } from './support.ts';

const cluster = await useCluster();
const NAMESPACE = 'system-upgrade';
const FIXTURES = fileURLToPath(new URL('../fixtures/suc-examples', import.meta.url));

const kubectl = (args: string[], input?: string) =>
  spawnSync(cluster.binaries.path.kubectl, [`--kubeconfig=${cluster.kubeconfigPath}`, ...args], {
    encoding: 'utf8',
    ...(input === undefined ? {} : { input }),
  });

const SUC_PLANS = { group: 'upgrade.cattle.io', version: 'v1', plural: 'plans' };

before(async () => {
  await installPlanCrd(cluster);
  const ns = kubectl(['create', 'namespace', NAMESPACE]);
  assert.equal(ns.status, 0, ns.stderr);
  const suc = kubectl([
    'apply',
    '-f',
    fileURLToPath(new URL('../fixtures/suc-crd/upgrade.cattle.io_plans.yaml', import.meta.url)),
  ]);
  assert.equal(suc.status, 0, suc.stderr);
  const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  await pollUntil("SUC's Plans to be served", () =>
    custom.listClusterCustomObject(SUC_PLANS).then(
      () => true,
      () => undefined,
    ),
  );
});

describe("SUC's example Plans with only apiVersion changed", () => {
  for (const file of readdirSync(FIXTURES).sort()) {
    test(`${file} is accepted unchanged and reads back as a Plan`, () => {
      const text = readFileSync(join(FIXTURES, file), 'utf8');
      const applied = kubectl(['apply', '--server-side', '--validate=strict', '-f', '-'], text);
      assert.equal(applied.status, 0, applied.stderr);
      const plans = parseAllDocuments(text)
        .map((d) => d.toJS() as Plan)
        .filter((o) => o?.kind === 'Plan');
      assert.ok(plans.length > 0, `${file} holds a Plan`);
      for (const sent of plans) {
        const got = kubectl(['get', 'plan', sent.metadata.name, '-n', NAMESPACE, '-o', 'json']);
        assert.equal(got.status, 0, got.stderr);
        const live = JSON.parse(got.stdout) as Plan;
        assert.deepEqual(live.spec, sent.spec, `${sent.metadata.name}: nothing pruned, nothing added`);
        assert.deepEqual([...Errors(PlanSpec, live.spec)], [], `${sent.metadata.name} is a PlanSpec`);
      }
    });
  }

  for (const file of readdirSync(FIXTURES).sort()) {
    test(`${file} in SUC's own group, as SUC publishes it, is accepted by SUC's CRD unchanged and valid to nuo`, async () => {
      const text = readFileSync(join(FIXTURES, file), 'utf8').replaceAll(
        'apiVersion: nuo.dev/v1alpha1',
        'apiVersion: upgrade.cattle.io/v1',
      );
      const applied = kubectl(['apply', '--server-side', '--validate=strict', '-f', '-'], text);
      assert.equal(applied.status, 0, applied.stderr);
      const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
      for (const sent of parseAllDocuments(text)
        .map((d) => d.toJS() as Plan)
        .filter((o) => o?.kind === 'Plan')) {
        const live = (await custom.getNamespacedCustomObject({
          ...SUC_PLANS,
          namespace: NAMESPACE,
          name: sent.metadata.name,
        })) as Plan;
        assert.equal(live.apiVersion, 'upgrade.cattle.io/v1');
        assert.deepEqual(live.spec, sent.spec, `${sent.metadata.name}: nothing pruned, nothing added`);
        assert.deepEqual(validatePlan(live.spec), [], `${sent.metadata.name}: valid to nuo's operator`);
      }
    });
  }

  test('the Jobs built for a live example Plan, its prepare Job and its attempt’s, are accepted by the API server and owned by the Plan', async () => {
    const live = JSON.parse(
      kubectl(['get', 'plan', 'k3s-agent', '-n', NAMESPACE, '-o', 'json']).stdout,
    ) as Plan;
    const input = {
      plan: { ...live.metadata, uid: live.metadata.uid ?? '', spec: live.spec },
      node: { name: 'node-1', bootId: 'boot-1' },
      version: mungeVersion(live.spec.version ?? ''),
      hash: 'a'.repeat(56),
    };
    const batch = cluster.kubeconfig.makeApiClient(BatchV1Api);
    const created = await batch.createNamespacedJob({ namespace: NAMESPACE, body: buildJob(input) });
    assert.equal(created.spec?.template.spec?.containers[0]?.image, 'rancher/k3s-upgrade:v1.20.11-k3s1');
    assert.equal(created.metadata?.ownerReferences?.[0]?.uid, live.metadata.uid);
    assert.equal(created.spec?.template.spec?.initContainers, undefined);
    const prepare = await batch.createNamespacedJob({ namespace: NAMESPACE, body: buildPrepareJob(input) });
    assert.deepEqual(
      prepare.spec?.template.spec?.containers.map((c) => [c.name, c.image, c.args?.join(' ')]),
      [['prepare', 'rancher/k3s-upgrade:v1.20.11-k3s1', 'prepare k3s-server']],
    );
    assert.equal(prepare.metadata?.ownerReferences?.[0]?.uid, live.metadata.uid);
    assert.notEqual(prepare.metadata?.name, created.metadata?.name);
  });

  test('a Plan using every field, every securityContext field included, is accepted whole, and its Job carries each', async () => {
    const sent = { ...PLAN_EVERY_FIELD, metadata: { name: 'every-field', namespace: NAMESPACE } };
    const applied = kubectl(['apply', '--server-side', '--validate=strict', '-f', '-'], JSON.stringify(sent));
    assert.equal(applied.status, 0, applied.stderr);
    const live = JSON.parse(
      kubectl(['get', 'plan', 'every-field', '-n', NAMESPACE, '-o', 'json']).stdout,
    ) as Plan;
    assert.deepEqual(live.spec, sent.spec, 'nothing pruned, nothing added');
    const input = {
      plan: { ...live.metadata, uid: live.metadata.uid ?? '', spec: live.spec },
      node: { name: 'node-1', bootId: 'boot-1' },
      version: mungeVersion(live.spec.version ?? ''),
      hash: 'b'.repeat(56),
    };
    const batch = cluster.kubeconfig.makeApiClient(BatchV1Api);
    const created = await batch.createNamespacedJob({ namespace: NAMESPACE, body: buildJob(input) });
    const prepare = await batch.createNamespacedJob({ namespace: NAMESPACE, body: buildPrepareJob(input) });
    for (const c of [prepare.spec?.template.spec?.containers[0], created.spec?.template.spec?.containers[0]])
      assert.deepEqual(
        JSON.parse(JSON.stringify(c?.securityContext)),
        EVERY_SECURITY_FIELD,
        `${c?.name}: every field reached the Job`,
      );
    assert.equal(created.metadata?.labels?.['upgrade.cattle.io/version'], 'v1.30.2-k3s1');
  });

  test("a Windows node's Job (SUC's HostProcess containers as SYSTEM) is accepted by the API server and stored as built", async () => {
    const live = JSON.parse(
      kubectl(['get', 'plan', 'k3s-agent', '-n', NAMESPACE, '-o', 'json']).stdout,
    ) as Plan;
    const input = {
      plan: { ...live.metadata, uid: live.metadata.uid ?? '', spec: live.spec },
      node: { name: 'win-1', os: 'windows', bootId: 'boot-1' },
      version: mungeVersion(live.spec.version ?? ''),
      hash: 'd'.repeat(56),
    };
    const batch = cluster.kubeconfig.makeApiClient(BatchV1Api);
    for (const job of [buildPrepareJob(input), buildJob(input)]) {
      await batch.createNamespacedJob({ namespace: NAMESPACE, body: job });
      const stored = await batch.readNamespacedJob({ name: job.metadata?.name ?? '', namespace: NAMESPACE });
      // The API server adds its defaults (terminationMessagePath, the pod's selector labels, ...), nothing else.
      const sent = JSON.parse(JSON.stringify(job));
      assert.deepEqual(builtPart(JSON.parse(JSON.stringify(stored)), sent), sent);
      const c = stored.spec?.template.spec?.containers[0];
      assert.deepEqual(
        JSON.parse(JSON.stringify(c?.securityContext)),
        { windowsOptions: { hostProcess: true, runAsUserName: 'NT AUTHORITY\\SYSTEM' } },
        `${c?.name}: HostProcess as SYSTEM`,
      );
    }
    // A Plan's own upgrade context without hostProcess beside SUC's HostProcess prepare: SUC's one pod
    // mixes the two, which the API server refuses, naming the field; nuo's two Jobs hold one kind each.
    const every = {
      plan: { ...PLAN_EVERY_FIELD.metadata, uid: 'u', spec: PLAN_EVERY_FIELD.spec },
      node: { name: 'win-1', os: 'windows', bootId: 'boot-1' },
      version: 'v1',
      hash: 'e'.repeat(56),
    };
    const [prepareJob, upgradeJob] = [buildPrepareJob(every), buildJob(every)];
    const sucPod = structuredClone(upgradeJob);
    sucPod.metadata = { ...sucPod.metadata, name: 'suc-one-pod' };
    const template = sucPod.spec?.template.spec;
    if (template) template.initContainers = prepareJob.spec?.template.spec?.containers;
    await assert.rejects(batch.createNamespacedJob({ namespace: NAMESPACE, body: sucPod }), /hostProcess/);
    for (const job of [prepareJob, upgradeJob])
      await batch.createNamespacedJob({ namespace: NAMESPACE, body: job });
  });

  test("kubectl shows SUC's columns and Applying", () => {
    const table = kubectl(['get', 'plans', '-n', NAMESPACE]);
    assert.equal(table.status, 0, table.stderr);
    assert.match(table.stdout, /^NAME\s+IMAGE\s+CHANNEL\s+VERSION\s+COMPLETE\s+APPLYING\s+MESSAGE\s+AGE$/m);
    assert.match(table.stdout, /^k3s-agent\s+rancher\/k3s-upgrade\s+v1\.20\.11\+k3s1\s/m);
  });
});

/**
 * The part of `stored` that `built` sets: each object cut to the keys `built` has (what the API server
 * added left out), arrays element by element; values `built` does not have stay as stored.
 */
function builtPart(stored: unknown, built: unknown): unknown {
  if (Array.isArray(built) && Array.isArray(stored))
    return stored.map((s, i) => (i < built.length ? builtPart(s, built[i]) : s));
  if (built && stored && typeof built === 'object' && typeof stored === 'object' && !Array.isArray(built))
    return Object.fromEntries(
      Object.keys(built).map((k) => [
        k,
        builtPart((stored as Record<string, unknown>)[k], (built as Record<string, unknown>)[k]),
      ]),
    );
  return stored;
}

describe('invalid Plans are refused by the API server', () => {
  const valid = { version: 'v1.2.3', upgrade: { image: 'example.com/os/upgrade' } };
  const create = (name: string, spec: unknown) =>
    kubectl(
      ['create', '--validate=strict', '-f', '-'],
      JSON.stringify({
        apiVersion: 'nuo.dev/v1alpha1',
        kind: 'Plan',
        metadata: { name, namespace: NAMESPACE },
        spec,
      }),
    );

  test('a minimal valid Plan is accepted and defaulted (the control for the refusals below)', () => {
    const r = create('minimal', valid);
    assert.equal(r.status, 0, r.stderr);
    const live = JSON.parse(kubectl(['get', 'plan', 'minimal', '-n', NAMESPACE, '-o', 'json']).stdout);
    assert.equal(live.spec.concurrency, 1);
  });

  test('a name longer than 63 characters is accepted, and the Job built for it too (its labels shortened)', async () => {
    const name = `kernel-${'p'.repeat(90)}`;
    const r = create(name, valid);
    assert.equal(r.status, 0, r.stderr);
    const live = JSON.parse(kubectl(['get', 'plan', name, '-n', NAMESPACE, '-o', 'json']).stdout) as Plan;
    const job = buildJob({
      plan: { ...live.metadata, uid: live.metadata.uid ?? '', spec: live.spec },
      node: { name: 'node-1', bootId: 'boot-1' },
      version: 'v1.2.3',
      hash: 'd'.repeat(56),
    });
    const batch = cluster.kubeconfig.makeApiClient(BatchV1Api);
    const created = await batch.createNamespacedJob({ namespace: NAMESPACE, body: job });
    assert.equal(created.metadata?.labels?.['nuo.dev/plan'], planKey(name));
    assert.equal(created.metadata?.annotations?.['nuo.dev/plan'], name);
  });

  test("concurrency 0 is accepted as it is (SUC's: the Plan selects no node)", () => {
    const r = create('paused-by-zero', { ...valid, concurrency: 0 });
    assert.equal(r.status, 0, r.stderr);
    const live = JSON.parse(kubectl(['get', 'plan', 'paused-by-zero', '-n', NAMESPACE, '-o', 'json']).stdout);
    assert.equal(live.spec.concurrency, 0);
  });

  const refused: [string, string, unknown, RegExp][] = [
    ['an unknown field', 'unknown', { ...valid, concurency: 2 }, /unknown field "spec\.concurency"/],
    [
      'a bad image reference',
      'image',
      { ...valid, upgrade: { image: 'Rancher/K3s Upgrade:latest' } },
      /spec\.upgrade\.image: Invalid value.*image must be an image reference/,
    ],
    [
      'a bad image tag',
      'tag',
      { ...valid, prepare: { image: 'alpine:3.18:x' } },
      /spec\.prepare\.image: Invalid value.*image must be an image reference/,
    ],
    [
      'a bad selector operator',
      'operator',
      { ...valid, nodeSelector: { matchExpressions: [{ key: 'a', operator: 'Like' }] } },
      /spec\.nodeSelector\.matchExpressions\[0\]\.operator: Unsupported value: "Like"/,
    ],
    ['concurrency -1', 'concurrency', { ...valid, concurrency: -1 }, /spec\.concurrency: Invalid value: -1/],
    [
      'neither version nor channel',
      'unversioned',
      { upgrade: valid.upgrade },
      /a Plan needs a version, or a channel that resolves one/,
    ],
    ['no upgrade container', 'no-upgrade', { version: 'v1' }, /a Plan needs an upgrade container/],
    [
      'an ftp channel',
      'channel',
      { ...valid, channel: 'ftp://example.com/stable' },
      /spec\.channel: Invalid value.*http or https URL/,
    ],
    [
      'disableEviction true',
      'eviction',
      { ...valid, drain: { disableEviction: true } },
      /spec\.drain\.disableEviction: Invalid value.*nuo drains through the Eviction API only: remove disableEviction.*unhealthyPodEvictionPolicy: AlwaysAllow/,
    ],
    [
      'both delete flags',
      'delete-flags',
      { ...valid, drain: { deleteLocalData: true, deleteEmptydirData: true } },
      /spec\.drain: Invalid value.*deleteEmptydirData or its old name deleteLocalData, not both/,
    ],
    [
      'a drain timeout in words',
      'timeout',
      { ...valid, drain: { timeout: '10 minutes' } },
      /spec\.drain\.timeout: Invalid value.*Go duration/,
    ],
    [
      'a day SUC does not know',
      'day',
      { ...valid, window: { days: ['Funday'], startTime: '01:00', endTime: '02:00' } },
      /spec\.window\.days\[0\]: Unsupported value: "Funday"/,
    ],
    [
      'a Localhost seccomp profile without its file',
      'seccomp',
      { ...valid, upgrade: { ...valid.upgrade, securityContext: { seccompProfile: { type: 'Localhost' } } } },
      /spec\.upgrade\.securityContext\.seccompProfile: Invalid value.*localhostProfile is required with type Localhost/,
    ],
    [
      'a procMount the API does not know',
      'procmount',
      { ...valid, prepare: { image: 'x', securityContext: { procMount: 'Masked' } } },
      /spec\.prepare\.securityContext\.procMount: Unsupported value: "Masked"/,
    ],
    [
      'an onFailure other than Retry or Stop',
      'onfailure',
      { ...valid, onFailure: 'Never' },
      /spec\.onFailure: Unsupported value: "Never": supported values: "Retry", "Stop"/,
    ],
  ];
  for (const [what, name, spec, message] of refused) {
    test(`refused: ${what}`, () => {
      const r = create(name, spec);
      assert.notEqual(r.status, 0, `${what} was accepted`);
      assert.match(r.stderr, message);
    });
  }
});
