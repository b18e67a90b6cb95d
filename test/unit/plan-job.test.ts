import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { JobAnnotations, JobLabels, planKey } from '../../src/api/keys.ts';
import type { Plan, PlanSpec } from '../../src/api/plan.ts';
import { jobView } from '../../src/operator/plans/plan-jobs.ts';
import {
  activeDeadline,
  buildJob,
  buildPrepareJob,
  imageAt,
  JOB_DEFAULTS,
  type JobInput,
  jobName,
  secretPath,
  ttlAfterFinished,
} from '../../src/plan/job.ts';
import { validatePlan } from '../../src/plan/validate.ts';
import { mungeVersion } from '../../src/plan/version.ts';

const HASH = 'a'.repeat(56);
const spec: PlanSpec = {
  version: 'v1.20.11+k3s1',
  serviceAccountName: 'system-upgrade',
  secrets: [
    { name: 'kernel', path: '/host/run/kernel' },
    { name: 'extra', ignoreUpdates: true, defaultMode: 0o400 },
  ],
  prepare: { image: 'rancher/k3s-upgrade', args: ['prepare', 'k3s-server'] },
  upgrade: {
    image: 'rancher/k3s-upgrade',
    envs: [{ name: 'EXTRA', value: '1' }],
    envFrom: [{ configMapRef: { name: 'settings' } }],
    volumes: [{ name: 'logs', source: '/var/log', destination: '/logs' }],
  },
  tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }],
  imagePullSecrets: [{ name: 'registry' }],
  priorityClassName: 'system-node-critical',
};
const input: JobInput = {
  plan: {
    name: 'k3s-server',
    namespace: 'system-upgrade',
    uid: 'plan-uid',
    labels: {
      team: 'ops',
      'nuo.dev/plan': 'forged',
      'upgrade.cattle.io/plan': 'forged',
      'plan.nuo.dev/x': 'y',
      'sim.nuo.dev/job-outcome': 'fail',
    },
    annotations: { owner: 'ops', 'kubectl.kubernetes.io/last-applied-configuration': '{}', 'nuo.dev/x': 'y' },
    spec,
  },
  node: { name: 'node-1.example.com', hostname: 'node-1', bootId: 'boot-1' },
  version: 'v1.20.11-k3s1',
  hash: HASH,
};
const job = buildJob(input);
const pod = job.spec?.template.spec;
const upgrade = pod?.containers[0];
const prepareJob = buildPrepareJob(input);
const prepare = prepareJob.spec?.template.spec?.containers[0];

test('jobName: SUC-style, deterministic, at most 63 characters, a new hash a new name', () => {
  assert.equal(jobName('p', 'n', 'abc'), 'apply-p-on-n-with-abc');
  assert.equal(jobName('p', 'n.example.com', 'abc'), 'apply-p-on-n-with-abc', 'the short node name');
  const long = jobName('k3s-server', 'node-1.example.com', HASH);
  assert.equal(long, jobName('k3s-server', 'node-1.example.com', HASH));
  assert.equal(long.length, 63);
  assert.match(long, /^apply-k3s-server-on-node-1-with-a+-[0-9a-f]{5}$/);
  assert.notEqual(jobName('k3s-server', 'node-1', 'b'.repeat(56)), jobName('k3s-server', 'node-1', HASH));
  assert.match(jobName('p'.repeat(63), 'n'.repeat(63), HASH), /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
  assert.equal(job.metadata?.name, jobName('k3s-server', 'node-1.example.com', HASH));
});

test('a Plan name past 63 characters: labels shortened as SUC shortens names, the whole name in nuo.dev/plan', () => {
  const name = `kernel-${'x'.repeat(80)}`;
  const long = buildJob({ ...input, plan: { ...input.plan, name } });
  const labels = long.metadata?.labels ?? {};
  const valid = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;
  for (const [k, v] of Object.entries(labels)) {
    assert.match(k.split('/').at(-1) ?? '', valid, `key ${k}`);
    assert.match(v, valid, `value of ${k}`);
  }
  assert.equal(labels[JobLabels.plan], planKey(name));
  assert.equal(labels['upgrade.cattle.io/plan'], planKey(name));
  assert.equal(labels[`plan.upgrade.cattle.io/${planKey(name)}`], HASH);
  assert.equal(long.metadata?.annotations?.[JobAnnotations.plan], name);
  assert.equal(jobView(long)?.plan, `system-upgrade/${name}`, 'the Plan read back whole');
  assert.match(long.metadata?.name ?? '', /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
});

test('jobView: the stage (a prepare Job is labelled so), and when the Job was created and finished', () => {
  assert.equal(jobView(job)?.stage, 'upgrade');
  const prepared = buildPrepareJob(input);
  prepared.metadata = { ...prepared.metadata, creationTimestamp: new Date('2026-11-21T12:00:00Z') };
  prepared.status = {
    conditions: [
      {
        type: 'Failed',
        status: 'True',
        reason: 'DeadlineExceeded',
        lastTransitionTime: new Date('2026-11-21T12:10:00Z'),
      },
    ],
  };
  const seen = jobView(prepared);
  assert.equal(seen?.stage, 'prepare');
  assert.equal(seen?.state, 'failed');
  assert.equal(seen?.createdAt, Date.parse('2026-11-21T12:00:00Z'));
  assert.equal(seen?.finishedAt, Date.parse('2026-11-21T12:10:00Z'), 'when its Failed condition turned True');
});

test('imageAt: the version as tag only for an image without tag or digest', () => {
  const cases: [string, string][] = [
    ['ubuntu', 'ubuntu:v1.20.11-k3s1'],
    ['registry:5000/os/upgrade', 'registry:5000/os/upgrade:v1.20.11-k3s1'],
    ['ubuntu:24.04', 'ubuntu:24.04'],
    ['registry:5000/os/upgrade:v2', 'registry:5000/os/upgrade:v2'],
    [`ubuntu@sha256:${'0'.repeat(64)}`, `ubuntu@sha256:${'0'.repeat(64)}`],
  ];
  for (const [image, want] of cases) assert.equal(imageAt(image, 'v1.20.11-k3s1'), want, image);
});

test("secretPath: SUC's default and relative paths under /run/system-upgrade/secrets", () => {
  assert.equal(secretPath({ name: 'k' }), '/run/system-upgrade/secrets/k');
  assert.equal(secretPath({ name: 'k', path: 'sub' }), '/run/system-upgrade/secrets/sub');
  assert.equal(secretPath({ name: 'k', path: '/host/run/k' }), '/host/run/k');
});

test('deadline and TTL: unset or negative 600, 0 none; 900 s or a minute past postCompleteDelay', () => {
  assert.deepEqual(
    [undefined, -1, 0, 30].map((s) => activeDeadline(s)),
    [600, 600, undefined, 30],
  );
  assert.deepEqual(
    [undefined, '5m', '20m'].map((d) => ttlAfterFinished(d)),
    [900, 900, 1260],
  );
  assert.equal(job.spec?.activeDeadlineSeconds, 600);
  assert.equal(
    buildJob({ ...input, plan: { ...input.plan, spec: { ...spec, jobActiveDeadlineSecs: 0 } } }).spec
      ?.activeDeadlineSeconds,
    undefined,
  );
  assert.equal(job.spec?.ttlSecondsAfterFinished, 900);
  assert.equal(job.spec?.backoffLimit, 2);
});

test("the Job: in the Plan's namespace, owned by it, labelled and annotated for nuo", () => {
  assert.equal(job.metadata?.namespace, 'system-upgrade');
  assert.deepEqual(job.metadata?.ownerReferences, [
    {
      apiVersion: 'nuo.dev/v1alpha1',
      kind: 'Plan',
      name: 'k3s-server',
      uid: 'plan-uid',
      controller: true,
      blockOwnerDeletion: true,
    },
  ]);
  const labels = {
    team: 'ops',
    'sim.nuo.dev/job-outcome': 'fail',
    'upgrade.cattle.io/controller': 'nuo',
    'upgrade.cattle.io/exclusive': 'false',
    'upgrade.cattle.io/node': 'node-1.example.com',
    'upgrade.cattle.io/plan': 'k3s-server',
    'upgrade.cattle.io/version': 'v1.20.11-k3s1',
    'plan.upgrade.cattle.io/k3s-server': HASH,
    [JobLabels.plan]: 'k3s-server',
    [JobLabels.node]: 'node-1.example.com',
    [JobLabels.hash]: HASH,
    [JobLabels.exclusive]: 'false',
  };
  assert.deepEqual(
    job.metadata?.labels,
    labels,
    "the Plan's labels without nuo's keys (nuo.dev/, plan.nuo.dev/) nor SUC's (cattle.io/), then SUC's and nuo's",
  );
  assert.deepEqual(job.spec?.template.metadata?.labels, labels);
  const annotations = {
    owner: 'ops',
    [JobAnnotations.plan]: 'k3s-server',
    [JobAnnotations.version]: 'v1.20.11-k3s1',
    [JobAnnotations.bootId]: 'boot-1',
  };
  assert.deepEqual(job.metadata?.annotations, {
    ...annotations,
    'upgrade.cattle.io/ttl-seconds-after-finished': '900',
  });
  assert.deepEqual(job.spec?.template.metadata?.annotations, annotations);
  const odd = buildJob({ ...input, version: 'v1.2.3~rc.1' });
  assert.equal(odd.metadata?.labels?.['upgrade.cattle.io/version'], undefined, 'not a label value: left off');
});

test("the pod: SUC's host access, pinned to the node, tolerating the cordon, never restarted", () => {
  assert.equal(pod?.hostIPC, true);
  assert.equal(pod?.hostPID, true);
  assert.equal(pod?.hostNetwork, true);
  assert.equal(pod?.dnsPolicy, 'ClusterFirstWithHostNet');
  assert.equal(pod?.restartPolicy, 'Never');
  assert.deepEqual(
    pod?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms,
    [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node-1'] }] }],
  );
  assert.deepEqual(pod?.tolerations, [
    { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' },
  ]);
  assert.equal(pod?.serviceAccountName, 'system-upgrade');
  assert.equal(pod?.priorityClassName, 'system-node-critical');
  assert.deepEqual(pod?.imagePullSecrets, [{ name: 'registry' }]);
  assert.deepEqual(
    pod?.volumes?.map((v) => v.name),
    ['host-root', 'pod-info', 'secret-kernel', 'secret-extra', 'logs'],
  );
  assert.deepEqual(pod?.volumes?.[0]?.hostPath, { path: '/', type: 'Directory' });
  assert.deepEqual(pod?.volumes?.[3]?.secret, { secretName: 'extra', optional: true, defaultMode: 0o400 });
  assert.deepEqual(pod?.volumes?.[4]?.hostPath, { path: '/var/log' });
});

test('anti-affinity: one Job of the Plan per node, or one exclusive Plan per node', () => {
  const term = (j: typeof job) =>
    j.spec?.template.spec?.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.[0];
  assert.deepEqual(term(job), {
    labelSelector: {
      matchExpressions: [{ key: 'upgrade.cattle.io/plan', operator: 'In', values: ['k3s-server'] }],
    },
    topologyKey: 'kubernetes.io/hostname',
  });
  const exclusive = buildJob({ ...input, plan: { ...input.plan, spec: { ...spec, exclusive: true } } });
  assert.deepEqual(term(exclusive)?.labelSelector, {
    matchExpressions: [{ key: 'upgrade.cattle.io/exclusive', operator: 'In', values: ['true'] }],
  });
  assert.equal(exclusive.metadata?.labels?.[JobLabels.exclusive], 'true');
});

test('the containers: prepare alone in a Job of its own, upgrade in the attempt’s, the tag from the version, mounts and environment', () => {
  assert.equal(pod?.initContainers, undefined, 'the attempt’s Job runs no prepare: it ran before');
  assert.deepEqual(
    prepareJob.spec?.template.spec?.containers.map((c) => c.name),
    ['prepare'],
    'the prepare Job runs prepare alone',
  );
  assert.equal(prepareJob.spec?.template.spec?.initContainers, undefined);
  assert.equal(prepareJob.metadata?.labels?.[JobLabels.stage], 'prepare');
  assert.equal(job.metadata?.labels?.[JobLabels.stage], undefined);
  assert.equal(prepareJob.metadata?.name, jobName('k3s-server', 'node-1.example.com', HASH, 'prepare'));
  assert.notEqual(prepareJob.metadata?.name, job.metadata?.name);
  assert.throws(
    () => buildPrepareJob({ ...input, plan: { ...input.plan, spec: { ...spec, prepare: undefined } } }),
    /has no prepare container/,
  );
  assert.equal(prepare?.name, 'prepare');
  assert.equal(prepare?.image, 'rancher/k3s-upgrade:v1.20.11-k3s1');
  assert.deepEqual(prepare?.args, ['prepare', 'k3s-server']);
  assert.equal(prepare?.securityContext, undefined, 'prepare runs with what the plan gives it');
  assert.equal(upgrade?.name, 'upgrade');
  assert.equal(upgrade?.image, 'rancher/k3s-upgrade:v1.20.11-k3s1');
  assert.deepEqual(upgrade?.securityContext, { privileged: true, capabilities: { add: ['CAP_SYS_BOOT'] } });
  assert.deepEqual(upgrade?.volumeMounts, [
    { name: 'host-root', mountPath: '/host' },
    { name: 'pod-info', mountPath: '/run/system-upgrade/pod', readOnly: true },
    { name: 'secret-kernel', mountPath: '/host/run/kernel', readOnly: true },
    { name: 'secret-extra', mountPath: '/run/system-upgrade/secrets/extra', readOnly: true },
    { name: 'logs', mountPath: '/logs' },
  ]);
  const env = Object.fromEntries(
    (upgrade?.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom?.fieldRef?.fieldPath]),
  );
  for (const prefix of ['NUO_', 'SYSTEM_UPGRADE_']) {
    assert.equal(env[`${prefix}NODE_NAME`], 'spec.nodeName');
    assert.equal(env[`${prefix}POD_NAME`], 'metadata.name');
    assert.equal(env[`${prefix}POD_UID`], 'metadata.uid');
    assert.equal(env[`${prefix}PLAN_NAME`], 'k3s-server');
  }
  assert.equal(env.NUO_PLAN_HASH, HASH);
  assert.equal(env.SYSTEM_UPGRADE_PLAN_LATEST_HASH, HASH);
  assert.equal(env.NUO_PLAN_VERSION, 'v1.20.11-k3s1');
  assert.equal(env.SYSTEM_UPGRADE_PLAN_LATEST_VERSION, 'v1.20.11-k3s1');
  assert.deepEqual(
    upgrade?.env?.map((e) => e.name),
    [
      ...['SYSTEM_UPGRADE_NODE_NAME', 'SYSTEM_UPGRADE_POD_NAME', 'SYSTEM_UPGRADE_POD_UID'],
      ...['NUO_NODE_NAME', 'NUO_POD_NAME', 'NUO_POD_UID', 'EXTRA'],
      ...[
        'SYSTEM_UPGRADE_PLAN_NAME',
        'SYSTEM_UPGRADE_PLAN_LATEST_HASH',
        'SYSTEM_UPGRADE_PLAN_LATEST_VERSION',
      ],
      ...['NUO_PLAN_NAME', 'NUO_PLAN_HASH', 'NUO_PLAN_VERSION'],
    ],
    "the plan's envs after the node's and pod's variables, before the Plan's, which so win (SUC's order)",
  );
  assert.deepEqual(upgrade?.envFrom, [{ configMapRef: { name: 'settings' } }]);
  const own = buildJob({
    ...input,
    plan: {
      ...input.plan,
      spec: { ...spec, upgrade: { image: 'x', securityContext: { privileged: false } } },
    },
  });
  assert.deepEqual(own.spec?.template.spec?.containers[0]?.securityContext, { privileged: false });
});

test("SUC's example Plans, in both groups, pass validation and build a Job whose image has the resolved tag", () => {
  const dir = fileURLToPath(new URL('../fixtures/suc-examples', import.meta.url));
  let plans = 0;
  for (const apiVersion of ['nuo.dev/v1alpha1', 'upgrade.cattle.io/v1'])
    for (const file of readdirSync(dir)) {
      for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
        const plan = { ...doc.toJS(), apiVersion } as Plan;
        if (plan?.kind !== 'Plan') continue;
        plans++;
        assert.deepEqual(validatePlan(plan.spec), [], `${file}: ${plan.metadata.name}`);
        const version = mungeVersion(plan.spec.version ?? '');
        const built = buildJob({
          plan: { apiVersion, ...plan.metadata, uid: 'uid', spec: plan.spec },
          node: { name: 'node-1', bootId: 'boot' },
          version,
          hash: HASH,
        });
        assert.equal(
          built.metadata?.ownerReferences?.[0]?.apiVersion,
          apiVersion,
          `${file}: owned in its group`,
        );
        const image = built.spec?.template.spec?.containers[0]?.image ?? '';
        const tagged = plan.spec.upgrade?.image.includes(':')
          ? plan.spec.upgrade.image
          : `${plan.spec.upgrade?.image}:${version}`;
        assert.equal(image, tagged, `${file}: ${plan.metadata.name}`);
        assert.match(image, /:[A-Za-z0-9_][A-Za-z0-9_.-]*$/, `${file}: a tag`);
      }
    }
  assert.equal(plans, 14, 'seven Plans in each group');
});

test("the operator's Job settings (SUC's SYSTEM_UPGRADE_JOB_*) in every Plan's Job", () => {
  const settings = {
    activeDeadlineSeconds: 1200,
    activeDeadlineSecondsMax: 0,
    backoffLimit: 5,
    privileged: false,
    imagePullPolicy: 'Always' as const,
    ttlSecondsAfterFinished: 3600,
    podReplacementPolicy: 'Failed' as const,
  };
  const built = buildJob({ ...input, settings });
  const builtPrepare = buildPrepareJob({ ...input, settings });
  assert.equal(built.spec?.activeDeadlineSeconds, 1200, 'a Plan without jobActiveDeadlineSecs');
  assert.equal(built.spec?.backoffLimit, 5);
  assert.equal(built.spec?.ttlSecondsAfterFinished, 3600);
  assert.equal(built.metadata?.annotations?.['upgrade.cattle.io/ttl-seconds-after-finished'], '3600');
  assert.equal(built.spec?.podReplacementPolicy, 'Failed');
  const pod = built.spec?.template.spec;
  assert.deepEqual(
    [...(builtPrepare.spec?.template.spec?.containers ?? []), ...(pod?.containers ?? [])].map(
      (c) => c.imagePullPolicy,
    ),
    ['Always', 'Always'],
  );
  assert.deepEqual(pod?.containers[0]?.securityContext, {
    privileged: false,
    capabilities: { add: ['CAP_SYS_BOOT'] },
  });
  const own = { ...spec, upgrade: { ...spec.upgrade, securityContext: { privileged: true } } } as PlanSpec;
  const kept = buildJob({ ...input, settings, plan: { ...input.plan, spec: own } });
  assert.deepEqual(
    kept.spec?.template.spec?.containers[0]?.securityContext,
    { privileged: true },
    "the Plan's own",
  );
  const long = { ...spec, postCompleteDelay: '2h' };
  assert.equal(
    buildJob({ ...input, settings, plan: { ...input.plan, spec: long } }).spec?.ttlSecondsAfterFinished,
    7260,
    'a minute past a longer postCompleteDelay',
  );
});

test("the deadline as SUC's: the Plan's, else the operator's; the maximum caps both and a Job without one", () => {
  const at = (secs: number | undefined, deadline: number, max: number) =>
    activeDeadline(secs, { ...JOB_DEFAULTS, activeDeadlineSeconds: deadline, activeDeadlineSecondsMax: max });
  assert.equal(at(undefined, 1200, 0), 1200);
  assert.equal(at(-5, 1200, 0), 1200);
  assert.equal(at(30, 1200, 0), 30);
  assert.equal(at(0, 1200, 0), undefined, '0: no deadline');
  assert.equal(at(0, 1200, 900), 900, 'no deadline under a maximum: the maximum');
  assert.equal(at(undefined, 0, 0), undefined, "the operator's 0: no deadline");
  assert.equal(at(undefined, 0, 300), 300);
  assert.equal(at(5000, 1200, 3600), 3600, 'capped');
  assert.equal(at(undefined, 1200, 900), 900, "the operator's own capped");
  assert.equal(at(60, 1200, 900), 60);
});
