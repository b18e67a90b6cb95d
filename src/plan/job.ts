/**
 * The Jobs that apply a Plan to one node, built from the Plan, the node, the resolved version and the
 * Plan's hash alone (pure): SUC's Job, so images written for SUC run unchanged, except that nuo drains
 * and cordons itself (its engine, before the Job) instead of kubectl in an init container, and runs the
 * Plan's `prepare` before all of it, as SUC does, in a Job of its own (the node holds no slot meanwhile).
 */
import type {
  V1Container,
  V1EnvVar,
  V1Job,
  V1SecurityContext,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, PLAN } from '../api/crd.ts';
import {
  JobAnnotations,
  JobLabels,
  PREPARE_STAGE,
  planKey,
  SUC_CONTROLLER,
  SucJobAnnotations,
  SucJobLabels,
  sucPlanLabel,
} from '../api/keys.ts';
import type { ContainerSpec, PlanSpec } from '../api/plan.ts';
import { safeConcatName } from '../kube/names.ts';
import { parseDuration } from '../util/duration.ts';

export interface JobInput {
  plan: {
    /** The Plan's group and version, its Job's owner: nuo's when none is given. */
    apiVersion?: string;
    name: string;
    namespace: string;
    uid: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    spec: PlanSpec;
  };
  /**
   * The node's name, its kubernetes.io/hostname label (the name when unset), its kubernetes.io/os label
   * (a Windows node gets SUC's HostProcess containers) and its boot ID now.
   */
  node: { name: string; hostname?: string; os?: string; bootId: string };
  version: string;
  hash: string;
  /** The operator's settings for every Plan's Job (SUC's SYSTEM_UPGRADE_JOB_*); SUC's defaults if none. */
  settings?: JobSettings;
}

/** Settings of every Plan's Job, the operator's (SUC's controller-wide SYSTEM_UPGRADE_JOB_* settings). */
export interface JobSettings {
  /** activeDeadlineSeconds of a Plan without jobActiveDeadlineSecs (or a negative one); 0: none. */
  activeDeadlineSeconds: number;
  /** The most activeDeadlineSeconds any Job gets, a Job without a deadline included; 0: no maximum. */
  activeDeadlineSecondsMax: number;
  backoffLimit: number;
  /** The upgrade container's default securityContext is privileged (one the Plan gives is kept as it is). */
  privileged: boolean;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** ttlSecondsAfterFinished, or a minute past postCompleteDelay when that is longer. */
  ttlSecondsAfterFinished: number;
  podReplacementPolicy: 'TerminatingOrFailed' | 'Failed';
}

/** SUC's defaults. */
export const JOB_DEFAULTS: JobSettings = {
  activeDeadlineSeconds: 600,
  activeDeadlineSecondsMax: 0,
  backoffLimit: 2,
  privileged: true,
  imagePullPolicy: 'IfNotPresent',
  ttlSecondsAfterFinished: 900,
  podReplacementPolicy: 'TerminatingOrFailed',
};

const HOSTNAME = 'kubernetes.io/hostname';
const SECRETS_DIR = '/run/system-upgrade/secrets';
/** A label value: SUC's version label is left off a Job whose version is not one, or the Job is refused. */
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

/** Which part of a Plan a Job runs: its `prepare` alone, before the attempt, or the attempt's upgrade. */
export type JobStage = 'prepare' | 'upgrade';

/**
 * `apply-<plan>-on-<node>-with-<hash>` (SUC's; the node's name up to its first dot), shortened as SUC
 * does; the prepare Job's begins `prepare-` instead.
 */
export const jobName = (plan: string, node: string, hash: string, stage: JobStage = 'upgrade'): string =>
  safeConcatName(
    stage === 'prepare' ? 'prepare' : 'apply',
    plan,
    'on',
    node.split('.')[0] ?? node,
    'with',
    hash,
  );

/** SUC's rule: an image without a tag or digest runs at the resolved version (no '+': version.ts). */
export function imageAt(image: string, version: string): string {
  const lastPart = image.slice(image.lastIndexOf('/') + 1);
  if (lastPart.includes(':') || image.includes('@')) return image;
  return `${image}:${version}`;
}

/** SUC's mount path of a Plan's Secret: its path, relative ones and the default under SECRETS_DIR. */
export function secretPath(secret: { name: string; path?: string }): string {
  if (!secret.path) return `${SECRETS_DIR}/${secret.name}`;
  return secret.path.startsWith('/') ? secret.path : `${SECRETS_DIR}/${secret.path}`;
}

/** `secret-<name>` shortened as SUC does, its dots written '-' (a volume name has none; SUC keeps them). */
const secretVolume = (name: string) => safeConcatName('secret', name.replaceAll('.', '-'));

/**
 * The Job's activeDeadlineSeconds (SUC's): unset or negative → the operator's, 0 → none, else as given;
 * then held to the operator's maximum, which a Job without a deadline gets.
 */
export function activeDeadline(secs: number | undefined, settings = JOB_DEFAULTS): number | undefined {
  const chosen = secs === undefined || secs < 0 ? settings.activeDeadlineSeconds : secs;
  const max = settings.activeDeadlineSecondsMax;
  if (chosen === 0) return max > 0 ? max : undefined;
  return max > 0 ? Math.min(chosen, max) : chosen;
}

/** The operator's TTL, or a minute past postCompleteDelay when that is longer, so the finished Job is still there. */
export function ttlAfterFinished(postCompleteDelay: string | undefined, settings = JOB_DEFAULTS): number {
  const delay = postCompleteDelay === undefined ? 0 : Math.ceil(parseDuration(postCompleteDelay) / 1000);
  return Math.max(settings.ttlSecondsAfterFinished, delay + 60);
}

/**
 * The map without nuo's keys and SUC's (any key holding "cattle.io/", SUC's rule), nor kubectl's
 * bookkeeping: the Job's own keys are the controllers' to write.
 */
const withoutKeys = (map: Record<string, string> | undefined, prefixes: readonly string[]) =>
  Object.fromEntries(
    Object.entries(map ?? {}).filter(
      ([k]) => !k.includes('cattle.io/') && !prefixes.some((p) => k.startsWith(p)),
    ),
  );

const fieldEnv = (name: string, fieldPath: string): V1EnvVar => ({
  name,
  valueFrom: { fieldRef: { fieldPath } },
});

type Pair = [suc: string, nuo: string, value: string | { field: string }];

/** SUC's variables, then the same values under nuo's names. */
const named = (pairs: readonly Pair[]): V1EnvVar[] => {
  const env = (name: string, v: Pair[2]): V1EnvVar =>
    typeof v === 'object' ? fieldEnv(name, v.field) : { name, value: v };
  return [...pairs.map(([suc, , v]) => env(suc, v)), ...pairs.map(([, nuo, v]) => env(nuo, v))];
};

/**
 * A container's environment in SUC's order (container.go New and WithPlanEnvironment): the node and pod
 * variables, the container's `envs`, then the Plan's variables, which so win over an `envs` entry of
 * their name (the last of a name is the one a container sees). nuo's twins sit beside SUC's.
 */
function containerEnv(spec: ContainerSpec, plan: string, hash: string, version: string): V1EnvVar[] {
  return [
    ...named([
      ['SYSTEM_UPGRADE_NODE_NAME', 'NUO_NODE_NAME', { field: 'spec.nodeName' }],
      ['SYSTEM_UPGRADE_POD_NAME', 'NUO_POD_NAME', { field: 'metadata.name' }],
      ['SYSTEM_UPGRADE_POD_UID', 'NUO_POD_UID', { field: 'metadata.uid' }],
    ]),
    ...((spec.envs ?? []) as V1EnvVar[]),
    ...named([
      ['SYSTEM_UPGRADE_PLAN_NAME', 'NUO_PLAN_NAME', plan],
      ['SYSTEM_UPGRADE_PLAN_LATEST_HASH', 'NUO_PLAN_HASH', hash],
      ['SYSTEM_UPGRADE_PLAN_LATEST_VERSION', 'NUO_PLAN_VERSION', version],
    ]),
  ];
}

/** SUC's default for the upgrade container: privileged (the operator's setting), and allowed to reboot the node. */
const upgradeContext = (privileged: boolean): V1SecurityContext => ({
  privileged,
  capabilities: { add: ['CAP_SYS_BOOT'] },
});

/** SUC's context on a Windows node: a HostProcess container running as SYSTEM, no Linux field set. */
const hostProcessContext = (): V1SecurityContext => ({
  windowsOptions: { hostProcess: true, runAsUserName: 'NT AUTHORITY\\SYSTEM' },
});

/** A node whose kubernetes.io/os label says Windows (SUC's test: the label alone). */
const isWindows = (node: JobInput['node']) => node.os === 'windows';

/**
 * SUC's securityContext of each container: on Windows, prepare's is always the HostProcess one (the Plan's
 * is not used) and upgrade's the Plan's or else the HostProcess one; elsewhere the Plan's, or for upgrade
 * the privileged default.
 */
function securityContextOf(
  name: 'prepare' | 'upgrade',
  spec: ContainerSpec,
  windows: boolean,
  settings: JobSettings,
): V1SecurityContext | undefined {
  const own = spec.securityContext as V1SecurityContext | undefined;
  if (windows && name === 'prepare') return hostProcessContext();
  if (own) return own;
  if (name === 'prepare') return undefined;
  return windows ? hostProcessContext() : upgradeContext(settings.privileged);
}

function container(
  name: 'prepare' | 'upgrade',
  spec: ContainerSpec,
  {
    plan,
    node,
    version,
    hash,
    settings = JOB_DEFAULTS,
  }: Pick<JobInput, 'plan' | 'node' | 'version' | 'hash' | 'settings'>,
): V1Container {
  const mounts: V1VolumeMount[] = [
    { name: 'host-root', mountPath: '/host' },
    { name: 'pod-info', mountPath: '/run/system-upgrade/pod', readOnly: true },
    ...(plan.spec.secrets ?? []).map((s) => ({
      name: secretVolume(s.name),
      mountPath: secretPath(s),
      readOnly: true,
    })),
    ...(spec.volumes ?? []).map((v) => ({ name: v.name, mountPath: v.destination })),
  ];
  const securityContext = securityContextOf(name, spec, isWindows(node), settings);
  return {
    name,
    image: imageAt(spec.image, version),
    imagePullPolicy: settings.imagePullPolicy,
    ...(spec.command ? { command: spec.command } : {}),
    ...(spec.args ? { args: spec.args } : {}),
    env: containerEnv(spec, plan.name, hash, version),
    ...(spec.envFrom ? { envFrom: spec.envFrom } : {}),
    volumeMounts: mounts,
    ...(securityContext ? { securityContext } : {}),
  };
}

function volumes(spec: PlanSpec): V1Volume[] {
  const out: V1Volume[] = [
    { name: 'host-root', hostPath: { path: '/', type: 'Directory' } },
    {
      name: 'pod-info',
      downwardAPI: {
        defaultMode: 0o644,
        items: [
          { path: 'labels', fieldRef: { fieldPath: 'metadata.labels', apiVersion: 'v1' } },
          { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations', apiVersion: 'v1' } },
        ],
      },
    },
    ...(spec.secrets ?? []).map((s) => ({
      name: secretVolume(s.name),
      // An ignoreUpdates Secret may be missing (SUC's rule): the Job runs without it.
      secret: {
        secretName: s.name,
        optional: s.ignoreUpdates ?? false,
        ...(s.defaultMode === undefined ? {} : { defaultMode: s.defaultMode }),
      },
    })),
  ];
  // The upgrade container's host paths, then the prepare container's not named already.
  for (const v of [...(spec.upgrade?.volumes ?? []), ...(spec.prepare?.volumes ?? [])]) {
    if (!out.some((o) => o.name === v.name)) out.push({ name: v.name, hostPath: { path: v.source } });
  }
  return out;
}

/** The Job of a Plan's attempt on the node: the upgrade container (the Plan's `prepare` ran before). */
export function buildJob(input: JobInput): V1Job {
  const { plan } = input;
  if (!plan.spec.upgrade) throw new Error(`Plan ${plan.namespace}/${plan.name} has no upgrade container`);
  return jobOf(input, 'upgrade', container('upgrade', plan.spec.upgrade, input));
}

/**
 * The Job that runs a Plan's `prepare` alone on the node, before its attempt is admitted (SUC runs it
 * before its cordon and drain): the container SUC's init container is, as the pod's only one.
 */
export function buildPrepareJob(input: JobInput): V1Job {
  const { plan } = input;
  if (!plan.spec.prepare) throw new Error(`Plan ${plan.namespace}/${plan.name} has no prepare container`);
  return jobOf(input, 'prepare', container('prepare', plan.spec.prepare, input));
}

function jobOf(input: JobInput, stage: JobStage, main: V1Container): V1Job {
  const { plan, node, version, hash, settings = JOB_DEFAULTS } = input;
  const spec = plan.spec;
  const exclusive = spec.exclusive ?? false;
  const labels = {
    ...withoutKeys(plan.labels, ['nuo.dev/', 'plan.nuo.dev/']),
    [SucJobLabels.controller]: SUC_CONTROLLER,
    [SucJobLabels.exclusive]: String(exclusive),
    [SucJobLabels.node]: node.name,
    [SucJobLabels.plan]: planKey(plan.name),
    ...(LABEL_VALUE.test(version) ? { [SucJobLabels.version]: version } : {}),
    [sucPlanLabel(plan.name)]: hash,
    [JobLabels.plan]: planKey(plan.name),
    [JobLabels.node]: node.name,
    [JobLabels.hash]: hash,
    [JobLabels.exclusive]: String(exclusive),
    ...(stage === 'prepare' ? { [JobLabels.stage]: PREPARE_STAGE } : {}),
  };
  const annotations = {
    ...withoutKeys(plan.annotations, ['nuo.dev/', 'kubectl.kubernetes.io/']),
    [JobAnnotations.plan]: plan.name,
    [JobAnnotations.version]: version,
    [JobAnnotations.bootId]: node.bootId,
  };
  const ttl = ttlAfterFinished(spec.postCompleteDelay, settings);
  const hostname = node.hostname ?? node.name;
  // Not two of this Plan's Jobs on a node, or for an exclusive Plan not two exclusive Plans' (SUC's), on
  // SUC's labels: nor beside SUC's Job of the Plan, or SUC's exclusive Jobs, while SUC still runs.
  const antiAffinity = exclusive
    ? { key: SucJobLabels.exclusive, operator: 'In', values: ['true'] }
    : { key: SucJobLabels.plan, operator: 'In', values: [planKey(plan.name)] };
  const deadline = activeDeadline(spec.jobActiveDeadlineSecs, settings);
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: jobName(plan.name, node.name, hash, stage),
      namespace: plan.namespace,
      labels,
      annotations: { ...annotations, [SucJobAnnotations.ttlSecondsAfterFinished]: String(ttl) },
      ownerReferences: [
        {
          apiVersion: plan.apiVersion ?? `${API_GROUP}/${API_VERSION}`,
          kind: PLAN.kind,
          name: plan.name,
          uid: plan.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      // Created only for a node nuo starts it on (its prepare, or its slot's attempt): it runs at once
      // (SUC's starts paused).
      completions: 1,
      parallelism: 1,
      podReplacementPolicy: settings.podReplacementPolicy,
      backoffLimit: settings.backoffLimit,
      ...(deadline === undefined ? {} : { activeDeadlineSeconds: deadline }),
      ttlSecondsAfterFinished: ttl,
      template: {
        metadata: { labels, annotations },
        spec: {
          hostIPC: true,
          hostPID: true,
          hostNetwork: true,
          dnsPolicy: 'ClusterFirstWithHostNet',
          restartPolicy: 'Never',
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [
                  { matchExpressions: [{ key: HOSTNAME, operator: 'In', values: [hostname] }] },
                ],
              },
            },
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { labelSelector: { matchExpressions: [antiAffinity] }, topologyKey: HOSTNAME },
              ],
            },
          },
          tolerations: [
            { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
            ...(spec.tolerations ?? []),
          ],
          ...(spec.serviceAccountName ? { serviceAccountName: spec.serviceAccountName } : {}),
          ...(spec.priorityClassName ? { priorityClassName: spec.priorityClassName } : {}),
          ...(spec.imagePullSecrets ? { imagePullSecrets: spec.imagePullSecrets } : {}),
          containers: [main],
          volumes: volumes(spec),
        },
      },
    },
  };
}
