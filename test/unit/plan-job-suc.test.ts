/**
 * The Job nuo builds for a Plan using every field, compared field by field with the Job SUC builds for
 * it. SUC's Job below is derived by reading SUC's source (rancher/system-upgrade-controller at d357e23):
 * pkg/upgrade/job/job.go New, pkg/upgrade/container/container.go New and its options, wrangler's
 * name.SafeConcatName; each row names where its expectation comes from. A row with `nuo` is a difference
 * nuo keeps on purpose, and says why (docs/plans.md, "What differs from SUC").
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import test from 'node:test';
import type { V1Container, V1EnvVar } from '@kubernetes/client-node';
import { buildJob, buildPrepareJob } from '../../src/plan/job.ts';
import { mungeVersion } from '../../src/plan/version.ts';
import { EVERY_SECURITY_FIELD, PLAN_EVERY_FIELD } from '../fixtures/plan-every-field.ts';

const HASH = 'c'.repeat(56);
const plan = PLAN_EVERY_FIELD;
const spec = plan.spec;
const version = mungeVersion(spec.version ?? '');
const job = buildJob({
  plan: { ...plan.metadata, uid: plan.metadata.uid ?? '', spec },
  node: { name: 'node-1.example.com', hostname: 'node-1', bootId: 'boot-1' },
  version,
  hash: HASH,
});
const pod = job.spec?.template.spec;
/** The Job nuo runs the Plan's prepare in, before the attempt: SUC's prepare init container, alone. */
const prepareJob = buildPrepareJob({
  plan: { ...plan.metadata, uid: plan.metadata.uid ?? '', spec },
  node: { name: 'node-1.example.com', hostname: 'node-1', bootId: 'boot-1' },
  version,
  hash: HASH,
});
const preparePod = prepareJob.spec?.template.spec;

/** wrangler's SafeConcatName, as SUC names the Job: 63 characters, the cut at 57 then 5 of sha256. */
const sucJobName = (() => {
  const full = `apply-os-on-node-1-with-${HASH}`;
  return `${full.slice(0, 57)}-${createHash('sha256').update(full).digest('hex').slice(0, 5)}`;
})();

/** container.go New: the node's and pod's variables, then the container's envs. */
const fieldEnv = (name: string, fieldPath: string): V1EnvVar => ({
  name,
  valueFrom: { fieldRef: { fieldPath } },
});
const sucEnv = (envs: V1EnvVar[]): V1EnvVar[] => [
  fieldEnv('SYSTEM_UPGRADE_NODE_NAME', 'spec.nodeName'),
  fieldEnv('SYSTEM_UPGRADE_POD_NAME', 'metadata.name'),
  fieldEnv('SYSTEM_UPGRADE_POD_UID', 'metadata.uid'),
  ...envs,
  // container.go WithPlanEnvironment, applied after New: so they come after (and win over) the envs.
  { name: 'SYSTEM_UPGRADE_PLAN_NAME', value: 'os' },
  { name: 'SYSTEM_UPGRADE_PLAN_LATEST_HASH', value: HASH },
  { name: 'SYSTEM_UPGRADE_PLAN_LATEST_VERSION', value: 'v1.30.2-k3s1' },
];

/** container.go New's two mounts, WithSecrets' (paths under /run/system-upgrade/secrets), WithVolumes'. */
const sucMounts = (want: NonNullable<typeof spec.upgrade>) => [
  { name: 'host-root', mountPath: '/host' },
  { name: 'pod-info', mountPath: '/run/system-upgrade/pod', readOnly: true },
  { name: 'secret-creds', mountPath: '/run/system-upgrade/secrets/creds-dir', readOnly: true },
  { name: 'secret-extra', mountPath: '/run/system-upgrade/secrets/extra', readOnly: true },
  ...(want.volumes ?? []).map((v) => ({ name: v.name, mountPath: v.destination })),
];

const sucLabels = {
  // job.go New, jobLabels; the controller's name is SUC's --name (its manifests: system-upgrade-controller).
  'upgrade.cattle.io/controller': 'system-upgrade-controller',
  'upgrade.cattle.io/exclusive': 'true',
  'upgrade.cattle.io/node': 'node-1.example.com',
  'upgrade.cattle.io/plan': 'os',
  'upgrade.cattle.io/version': 'v1.30.2-k3s1',
  'plan.upgrade.cattle.io/os': HASH,
  // then the Plan's labels whose key holds no "cattle.io/".
  team: 'ops',
};

interface Row {
  field: string;
  /** Where in SUC's source the expectation comes from. */
  from: string;
  suc: unknown;
  got: unknown;
  /** nuo's value where it differs on purpose, and why. */
  nuo?: { value: unknown; why: string };
}

const pick = (map: Record<string, string> | undefined, keys: readonly string[]) =>
  Object.fromEntries(keys.filter((k) => map?.[k] !== undefined).map((k) => [k, map?.[k]]));
const sucNamed = (env: V1EnvVar[] | undefined) => (env ?? []).filter((e) => !e.name.startsWith('NUO_'));

function containerRows(
  name: string,
  c: V1Container | undefined,
  want: NonNullable<typeof spec.upgrade>,
): Row[] {
  const from =
    'container.go New with WithLatestTag, WithSecrets, WithPlanEnvironment, WithImagePullPolicy, WithVolumes, WithSecurityContext';
  return [
    { field: `${name}.name`, from: 'job.go New', suc: name, got: c?.name },
    {
      field: `${name}.image`,
      from: `${from}: the name-only image tagged with latestVersion`,
      suc: `${want.image}:v1.30.2-k3s1`,
      got: c?.image,
    },
    { field: `${name}.command`, from, suc: want.command, got: c?.command },
    { field: `${name}.args`, from, suc: want.args, got: c?.args },
    { field: `${name}.env (SUC's names)`, from, suc: sucEnv(want.envs as V1EnvVar[]), got: sucNamed(c?.env) },
    { field: `${name}.envFrom`, from, suc: want.envFrom, got: c?.envFrom },
    { field: `${name}.volumeMounts`, from, suc: sucMounts(want), got: c?.volumeMounts },
    {
      field: `${name}.imagePullPolicy`,
      from: 'job.go defaultImagePullPolicy',
      suc: 'IfNotPresent',
      got: c?.imagePullPolicy,
    },
    {
      field: `${name}.securityContext`,
      from: "job.go New: the Plan's, passed as is",
      suc: EVERY_SECURITY_FIELD,
      got: c?.securityContext,
    },
  ];
}

const rows: Row[] = [
  {
    field: 'metadata.name',
    from: 'job.go New: SafeConcatName("apply", plan, "on", short node name, "with", hash)',
    suc: sucJobName,
    got: job.metadata?.name,
  },
  { field: 'metadata.namespace', from: 'job.go New', suc: 'system-upgrade', got: job.metadata?.namespace },
  {
    field: "metadata.labels (SUC's keys)",
    from: 'job.go New, jobLabels and the Plan labels without cattle.io/ keys',
    suc: sucLabels,
    got: pick(job.metadata?.labels, Object.keys(sucLabels)),
    nuo: {
      value: { ...sucLabels, 'upgrade.cattle.io/controller': 'nuo' },
      why: "SUC's controller handles the Jobs labelled with its own name: a SUC still running leaves nuo's alone",
    },
  },
  {
    field: 'metadata.labels (a Plan label under cattle.io/)',
    from: 'job.go New: keys holding "cattle.io/" are not copied',
    suc: undefined,
    got: job.metadata?.labels?.['upgrade.cattle.io/forged'],
  },
  {
    field: "metadata.labels (nuo's keys)",
    from: 'not in SUC',
    suc: {},
    got: pick(job.metadata?.labels, [
      'nuo.dev/plan',
      'nuo.dev/node',
      'nuo.dev/plan-hash',
      'nuo.dev/exclusive',
    ]),
    nuo: {
      value: {
        'nuo.dev/plan': 'os',
        'nuo.dev/node': 'node-1.example.com',
        'nuo.dev/plan-hash': HASH,
        'nuo.dev/exclusive': 'true',
      },
      why: "nuo's own, beside SUC's: nuo watches its Jobs by them",
    },
  },
  {
    field: 'metadata.annotations',
    from: 'job.go New, jobAnnotations: the TTL, and the Plan annotations without cattle.io/ and kubectl.kubernetes.io/ keys',
    suc: { 'upgrade.cattle.io/ttl-seconds-after-finished': '1260', owner: 'ops' },
    got: job.metadata?.annotations,
    nuo: {
      value: {
        'upgrade.cattle.io/ttl-seconds-after-finished': '1260',
        owner: 'ops',
        'nuo.dev/plan': 'os',
        'nuo.dev/version': 'v1.30.2-k3s1',
        'nuo.dev/boot-id': 'boot-1',
      },
      why: "nuo's Plan name, version and boot ID beside: a name or version may not fit a label value, the boot ID tells a Job's own reboot",
    },
  },
  {
    field: 'spec.podReplacementPolicy',
    from: 'job.go defaultPodReplacementPolicy',
    suc: 'TerminatingOrFailed',
    got: job.spec?.podReplacementPolicy,
  },
  { field: 'spec.backoffLimit', from: 'job.go defaultBackoffLimit', suc: 2, got: job.spec?.backoffLimit },
  {
    field: 'spec.ttlSecondsAfterFinished',
    from: 'job.go New: 900, or postCompleteDelay + 1 minute when longer',
    suc: 1260,
    got: job.spec?.ttlSecondsAfterFinished,
  },
  { field: 'spec.completions', from: 'job.go New', suc: 1, got: job.spec?.completions },
  {
    field: 'spec.parallelism',
    from: 'job.go New: 0 (paused), 1 once the node is in status.applying',
    suc: 1,
    got: job.spec?.parallelism,
  },
  {
    field: 'spec.activeDeadlineSeconds',
    from: 'job.go New: jobActiveDeadlineSecs > 0 as set',
    suc: 1200,
    got: job.spec?.activeDeadlineSeconds,
  },
  {
    field: 'template.metadata.labels',
    from: 'job.go New: the Job labels',
    suc: job.metadata?.labels,
    got: job.spec?.template.metadata?.labels,
  },
  {
    field: 'template.metadata.annotations',
    from: 'job.go New, podAnnotations: the Plan annotations without cattle.io/ and kubectl.kubernetes.io/ keys',
    suc: { owner: 'ops' },
    got: job.spec?.template.metadata?.annotations,
    nuo: {
      value: {
        owner: 'ops',
        'nuo.dev/plan': 'os',
        'nuo.dev/version': 'v1.30.2-k3s1',
        'nuo.dev/boot-id': 'boot-1',
      },
      why: "nuo's Plan name, version and boot ID, as on the Job",
    },
  },
  { field: 'pod.hostIPC', from: 'job.go New', suc: true, got: pod?.hostIPC },
  { field: 'pod.hostPID', from: 'job.go New', suc: true, got: pod?.hostPID },
  { field: 'pod.hostNetwork', from: 'job.go New', suc: true, got: pod?.hostNetwork },
  { field: 'pod.dnsPolicy', from: 'job.go New', suc: 'ClusterFirstWithHostNet', got: pod?.dnsPolicy },
  { field: 'pod.restartPolicy', from: 'job.go New', suc: 'Never', got: pod?.restartPolicy },
  {
    field: 'pod.priorityClassName',
    from: 'job.go New',
    suc: 'system-node-critical',
    got: pod?.priorityClassName,
  },
  {
    field: 'pod.serviceAccountName',
    from: 'job.go New',
    suc: 'system-upgrade',
    got: pod?.serviceAccountName,
  },
  {
    field: 'pod.imagePullSecrets',
    from: 'job.go New',
    suc: [{ name: 'registry' }],
    got: pod?.imagePullSecrets,
  },
  {
    field: 'pod.affinity.nodeAffinity',
    from: "job.go New: kubernetes.io/hostname In the node's hostname label (node.go Hostname)",
    suc: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node-1'] }] },
        ],
      },
    },
    got: pod?.affinity?.nodeAffinity,
  },
  {
    field: 'pod.affinity.podAntiAffinity',
    from: 'job.go New: for an exclusive Plan, upgrade.cattle.io/exclusive In ["true"] per hostname',
    suc: {
      requiredDuringSchedulingIgnoredDuringExecution: [
        {
          labelSelector: {
            matchExpressions: [{ key: 'upgrade.cattle.io/exclusive', operator: 'In', values: ['true'] }],
          },
          topologyKey: 'kubernetes.io/hostname',
        },
      ],
    },
    got: pod?.affinity?.podAntiAffinity,
  },
  {
    field: 'pod.tolerations',
    from: "job.go New: the cordon's taint tolerated, then the Plan's",
    suc: [
      { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
      ...(spec.tolerations ?? []),
    ],
    got: pod?.tolerations,
  },
  {
    field: 'pod.volumes',
    from: "job.go New: host-root, pod-info (mode 420, fieldRefs of v1), the secrets (SafeConcatName, optional when ignoreUpdates), the upgrade container's host paths",
    suc: [
      { name: 'host-root', hostPath: { path: '/', type: 'Directory' } },
      {
        name: 'pod-info',
        downwardAPI: {
          defaultMode: 420,
          items: [
            { path: 'labels', fieldRef: { fieldPath: 'metadata.labels', apiVersion: 'v1' } },
            { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations', apiVersion: 'v1' } },
          ],
        },
      },
      { name: 'secret-creds', secret: { secretName: 'creds', optional: false } },
      { name: 'secret-extra', secret: { secretName: 'extra', optional: true, defaultMode: 0o400 } },
      { name: 'logs', hostPath: { path: '/var/log' } },
      { name: 'etc', hostPath: { path: '/etc' } },
    ],
    got: pod?.volumes,
  },
  {
    field: 'pod.initContainers (names)',
    from: 'job.go New: prepare, then a kubectl drain container (cordon without drain)',
    suc: ['prepare', 'drain'],
    got: pod?.initContainers?.map((c) => c.name),
    nuo: {
      value: undefined,
      why: 'nuo runs prepare before its attempt, in a Job of its own (no slot held while it waits), then cordons and drains in its engine (Eviction API, bounded, within the budget), so the Job needs no kubectl',
    },
  },
  {
    field: 'prepare Job: metadata.name',
    from: 'not in SUC (its prepare is an init container of the Job)',
    suc: undefined,
    got: prepareJob.metadata?.name,
    nuo: {
      value: (() => {
        const full = `prepare-os-on-node-1-with-${HASH}`;
        return `${full.slice(0, 57)}-${createHash('sha256').update(full).digest('hex').slice(0, 5)}`;
      })(),
      why: "SUC's Job name with prepare- for apply-, shortened as SUC shortens names",
    },
  },
  {
    field: 'prepare Job: metadata.labels',
    from: "job.go New, jobLabels (SUC's prepare runs in the Job's pod)",
    suc: job.metadata?.labels,
    got: prepareJob.metadata?.labels,
    nuo: {
      value: { ...job.metadata?.labels, 'nuo.dev/job-stage': 'prepare' },
      why: 'nuo.dev/job-stage names the Job that runs prepare alone, whose pod disrupts nothing',
    },
  },
  {
    field: 'prepare Job: everything but its name, labels and containers',
    from: 'job.go New: the one Job',
    suc: { ...job, metadata: { ...job.metadata, name: '', labels: {} }, spec: { ...job.spec, template: {} } },
    got: {
      ...prepareJob,
      metadata: { ...prepareJob.metadata, name: '', labels: {} },
      spec: { ...prepareJob.spec, template: {} },
    },
  },
  {
    field: 'prepare Job: the pod but its containers',
    from: 'job.go New: the one pod',
    suc: { ...pod, containers: [] },
    got: { ...preparePod, containers: [] },
  },
  {
    field: 'prepare Job: pod.containers (names)',
    from: 'job.go New: prepare is the first init container',
    suc: ['prepare'],
    got: preparePod?.containers.map((c) => c.name),
  },
  ...containerRows('prepare', preparePod?.containers[0], spec.prepare as NonNullable<typeof spec.prepare>),
  {
    field: 'pod.containers (names)',
    from: 'job.go New',
    suc: ['upgrade'],
    got: pod?.containers.map((c) => c.name),
  },
  ...containerRows('upgrade', pod?.containers[0], spec.upgrade as NonNullable<typeof spec.upgrade>),
];

test("the Job for a Plan using every field, field by field against SUC's job builder", () => {
  for (const row of rows) {
    const want = row.nuo ? row.nuo.value : row.suc;
    assert.deepEqual(
      row.got,
      want,
      `${row.field} (SUC: ${row.from}${row.nuo ? `; nuo differs: ${row.nuo.why}` : ''})`,
    );
    if (row.nuo) assert.notDeepEqual(row.nuo.value, row.suc, `${row.field}: a difference that is one`);
  }
});

test("the Job for the same Plan in SUC's group is the same Job, owned in SUC's group", () => {
  const suc = buildJob({
    plan: { apiVersion: 'upgrade.cattle.io/v1', ...plan.metadata, uid: plan.metadata.uid ?? '', spec },
    node: { name: 'node-1.example.com', hostname: 'node-1', bootId: 'boot-1' },
    version,
    hash: HASH,
  });
  const owner = suc.metadata?.ownerReferences?.[0];
  assert.equal(owner?.apiVersion, 'upgrade.cattle.io/v1');
  const { ownerReferences: _s, ...sucMeta } = suc.metadata ?? {};
  const { ownerReferences: _n, ...nuoMeta } = job.metadata ?? {};
  assert.deepEqual(
    { ...suc, metadata: sucMeta },
    { ...job, metadata: nuoMeta },
    'every other field as compared above',
  );
  assert.deepEqual({ ...owner, apiVersion: 'nuo.dev/v1alpha1' }, job.metadata?.ownerReferences?.[0]);
});

test("the Plan's variables win over an envs entry of their name, as in SUC; nuo's twins carry the same values", () => {
  const env = (c: V1Container | undefined, name: string) => c?.env?.findLast((e) => e.name === name);
  const prepare = preparePod?.containers[0];
  const upgrade = pod?.containers[0];
  assert.equal(env(prepare, 'SYSTEM_UPGRADE_PLAN_NAME')?.value, 'os', 'not the envs entry "forged"');
  assert.equal(env(upgrade, 'SYSTEM_UPGRADE_PLAN_LATEST_VERSION')?.value, version, 'not the envs entry "v0"');
  for (const c of [prepare, upgrade]) {
    for (const [suc, nuo] of [
      ['SYSTEM_UPGRADE_NODE_NAME', 'NUO_NODE_NAME'],
      ['SYSTEM_UPGRADE_POD_NAME', 'NUO_POD_NAME'],
      ['SYSTEM_UPGRADE_POD_UID', 'NUO_POD_UID'],
      ['SYSTEM_UPGRADE_PLAN_NAME', 'NUO_PLAN_NAME'],
      ['SYSTEM_UPGRADE_PLAN_LATEST_HASH', 'NUO_PLAN_HASH'],
      ['SYSTEM_UPGRADE_PLAN_LATEST_VERSION', 'NUO_PLAN_VERSION'],
    ] as const) {
      const [a, b] = [env(c, suc), env(c, nuo)];
      assert.deepEqual({ ...b, name: suc }, a, `${c?.name}: ${nuo} twins ${suc}`);
      const at = (n: string) => c?.env?.findLastIndex((e) => e.name === n) ?? -1;
      const envs = c?.name === 'prepare' ? spec.prepare?.envs : spec.upgrade?.envs;
      const lastEnvs = Math.max(...(envs ?? []).map((e) => at(e.name)).filter((i) => i >= 0));
      if (suc.startsWith('SYSTEM_UPGRADE_PLAN_'))
        assert.ok(at(nuo) > lastEnvs, `${c?.name}: ${nuo} after the envs`);
    }
  }
});

test('a prepare host path the upgrade container does not mount is a volume of the pod too (SUC adds only the upgrade container’s, and its pod is refused)', () => {
  const own = buildJob({
    plan: {
      ...plan.metadata,
      uid: 'u',
      spec: {
        ...spec,
        prepare: { image: 'x', volumes: [{ name: 'boot', source: '/boot', destination: '/boot' }] },
      },
    },
    node: { name: 'n', bootId: 'b' },
    version,
    hash: HASH,
  });
  assert.deepEqual(own.spec?.template.spec?.volumes?.at(-1), { name: 'boot', hostPath: { path: '/boot' } });
});

test('job names shortened as wrangler’s SafeConcatName: a cut at a dash keeps 56 characters and 6 of the digest', () => {
  const full = `apply-${'p'.repeat(50)}-on-n-with-${HASH}`;
  const name = buildJob({
    plan: { ...plan.metadata, name: 'p'.repeat(50), uid: 'u', spec },
    node: { name: 'n', bootId: 'b' },
    version,
    hash: HASH,
  }).metadata?.name;
  assert.equal(full[56], '-');
  assert.equal(name, `${full.slice(0, 56)}-${createHash('sha256').update(full).digest('hex').slice(0, 6)}`);
});

/** job.go New's context of each container on a node labelled kubernetes.io/os=windows. */
const HOST_PROCESS = { windowsOptions: { hostProcess: true, runAsUserName: 'NT AUTHORITY\\SYSTEM' } };

const windowsInput = (upgrade: NonNullable<typeof spec.upgrade>) => ({
  plan: { ...plan.metadata, uid: plan.metadata.uid ?? '', spec: { ...spec, upgrade } },
  node: { name: 'node-1.example.com', hostname: 'node-1', os: 'windows', bootId: 'boot-1' },
  version,
  hash: HASH,
});
const windowsJob = (upgrade: NonNullable<typeof spec.upgrade>) => buildJob(windowsInput(upgrade));

/** The pod without its containers' securityContexts: what a Windows node's Job shares with a Linux one's. */
const withoutContexts = (j: ReturnType<typeof buildJob>) => {
  const p = structuredClone(j.spec?.template.spec);
  for (const c of [...(p?.initContainers ?? []), ...(p?.containers ?? [])]) delete c.securityContext;
  return p;
};

test("the Job for a Windows node, field by field against SUC's job builder: HostProcess containers as SYSTEM, the rest as on Linux", () => {
  const upgrade = spec.upgrade as NonNullable<typeof spec.upgrade>;
  const { securityContext: _, ...noContext } = upgrade;
  const own = windowsJob(upgrade);
  const none = windowsJob(noContext);
  const ownPod = own.spec?.template.spec;
  const nonePod = none.spec?.template.spec;
  const windowsRows: Row[] = [
    {
      field: 'prepare.securityContext',
      from: "job.go New: on Windows, prepare's is replaced by HostProcess as NT AUTHORITY\\SYSTEM, the Plan's not used",
      suc: HOST_PROCESS,
      got: buildPrepareJob(windowsInput(upgrade)).spec?.template.spec?.containers[0]?.securityContext,
    },
    {
      field: 'upgrade.securityContext (the Plan gives one)',
      from: "job.go New: the Plan's, passed as is, on Windows too",
      suc: EVERY_SECURITY_FIELD,
      got: ownPod?.containers[0]?.securityContext,
    },
    {
      field: 'upgrade.securityContext (the Plan gives none)',
      from: 'job.go New: on Windows, HostProcess as NT AUTHORITY\\SYSTEM (no privileged, no CAP_SYS_BOOT)',
      suc: HOST_PROCESS,
      got: nonePod?.containers[0]?.securityContext,
    },
    {
      field: 'upgrade.securityContext (the Plan gives none, Linux)',
      from: 'job.go New: privileged (SYSTEM_UPGRADE_JOB_PRIVILEGED), CAP_SYS_BOOT added',
      suc: { privileged: true, capabilities: { add: ['CAP_SYS_BOOT'] } },
      got: buildJob({
        plan: { ...plan.metadata, uid: 'u', spec: { ...spec, upgrade: noContext } },
        node: { name: 'node-1.example.com', hostname: 'node-1', os: 'linux', bootId: 'boot-1' },
        version,
        hash: HASH,
      }).spec?.template.spec?.containers[0]?.securityContext,
    },
    {
      field: 'pod.hostNetwork, hostPID, hostIPC, dnsPolicy',
      from: 'job.go New: the same on every node (a HostProcess pod must use the host network)',
      suc: [true, true, true, 'ClusterFirstWithHostNet'],
      got: [ownPod?.hostNetwork, ownPod?.hostPID, ownPod?.hostIPC, ownPod?.dnsPolicy],
    },
    {
      field: 'pod.os, pod.securityContext, pod.nodeSelector',
      from: 'job.go New: none set (the node is chosen by its hostname)',
      suc: [undefined, undefined, undefined],
      got: [ownPod?.os, ownPod?.securityContext, ownPod?.nodeSelector],
    },
    {
      field: 'pod.volumes (host-root)',
      from: 'job.go New: the host root as a Directory, on Windows too',
      suc: { name: 'host-root', hostPath: { path: '/', type: 'Directory' } },
      got: ownPod?.volumes?.[0],
    },
    {
      field: 'pod.initContainers (names)',
      from: 'job.go New: prepare, then a kubectl drain container (SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE_WINDOWS), HostProcess',
      suc: ['prepare', 'drain'],
      got: ownPod?.initContainers?.map((c) => c.name),
      nuo: {
        value: undefined,
        why: 'nuo runs prepare in a Job of its own before, then cordons and drains in its engine, so it needs no Windows kubectl image (SUC refuses to start without one)',
      },
    },
    {
      field: 'everything else',
      from: 'job.go New: only the securityContexts depend on the node being Windows',
      suc: withoutContexts(job),
      got: withoutContexts(own),
    },
    {
      field: 'metadata and the Job spec',
      from: 'job.go New',
      suc: { ...job, spec: { ...job.spec, template: undefined } },
      got: { ...own, spec: { ...own.spec, template: undefined } },
    },
  ];
  for (const row of windowsRows) {
    const want = row.nuo ? row.nuo.value : row.suc;
    assert.deepEqual(
      row.got,
      want,
      `${row.field} (SUC: ${row.from}${row.nuo ? `; nuo: ${row.nuo.why}` : ''})`,
    );
  }
});
