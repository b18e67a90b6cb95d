/**
 * The Job that applies a Plan to one node, built from the Plan, the node, the resolved version and the
 * Plan's hash alone (pure): SUC's Job, so images written for SUC run unchanged, except that nuo drains
 * and cordons itself (its engine, before the Job) instead of kubectl in an init container.
 */
import { createHash } from 'node:crypto';
import type {
  V1Container,
  V1EnvVar,
  V1Job,
  V1SecurityContext,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, PLAN } from '../api/crd.ts';
import { JobAnnotations, JobLabels } from '../api/keys.ts';
import type { ContainerSpec, PlanSpec } from '../api/plan.ts';
import { parseDuration } from '../util/duration.ts';

export interface JobInput {
  plan: {
    name: string;
    namespace: string;
    uid: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    spec: PlanSpec;
  };
  /** The node's name, its kubernetes.io/hostname label (the name when unset) and its boot ID now. */
  node: { name: string; hostname?: string; bootId: string };
  version: string;
  hash: string;
}

const HOSTNAME = 'kubernetes.io/hostname';
const SECRETS_DIR = '/run/system-upgrade/secrets';
const DEFAULT_DEADLINE_SECONDS = 600;
const DEFAULT_TTL_SECONDS = 900;
const MAX_NAME = 63;

/**
 * `apply-<plan>-on-<node>-with-<hash>` (SUC's; the node's name up to its first dot), and when that is
 * longer than a label value may be, its first 57 characters and 5 of a digest of the whole name: the
 * same inputs give the same name, another hash another name.
 */
export function jobName(plan: string, node: string, hash: string): string {
  const full = `apply-${plan}-on-${node.split('.')[0]}-with-${hash}`;
  if (full.length <= MAX_NAME) return full;
  const digest = createHash('sha256').update(full).digest('hex').slice(0, 5);
  return `${full.slice(0, MAX_NAME - 6).replace(/[-.]+$/, '')}-${digest}`;
}

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

/** `secret-<name>`, shortened as job names are when it is too long for a volume name. */
const secretVolume = (name: string) => {
  const full = `secret-${name}`.replaceAll('.', '-');
  if (full.length <= MAX_NAME) return full;
  return `${full.slice(0, MAX_NAME - 6)}-${createHash('sha256').update(full).digest('hex').slice(0, 5)}`;
};

/** The Job's activeDeadlineSeconds (SUC's): unset or negative → 600, 0 → none, else as given. */
export function activeDeadline(secs: number | undefined): number | undefined {
  if (secs === undefined || secs < 0) return DEFAULT_DEADLINE_SECONDS;
  return secs === 0 ? undefined : secs;
}

/** 900 s, or a minute past postCompleteDelay when that is longer, so the finished Job is still there. */
export function ttlAfterFinished(postCompleteDelay: string | undefined): number {
  const delay = postCompleteDelay === undefined ? 0 : Math.ceil(parseDuration(postCompleteDelay) / 1000);
  return Math.max(DEFAULT_TTL_SECONDS, delay + 60);
}

/** The map without the keys under these prefixes (nuo's own keys, kubectl's bookkeeping). */
const withoutKeys = (map: Record<string, string> | undefined, prefixes: readonly string[]) =>
  Object.fromEntries(Object.entries(map ?? {}).filter(([k]) => !prefixes.some((p) => k.startsWith(p))));

const fieldEnv = (name: string, fieldPath: string): V1EnvVar => ({
  name,
  valueFrom: { fieldRef: { fieldPath } },
});

/** nuo's variables and the same values under SUC's names, which images written for SUC read. */
function planEnv(plan: string, hash: string, version: string): V1EnvVar[] {
  const pairs: [string, string, V1EnvVar['value'] | { field: string }][] = [
    ['NUO_NODE_NAME', 'SYSTEM_UPGRADE_NODE_NAME', { field: 'spec.nodeName' }],
    ['NUO_POD_NAME', 'SYSTEM_UPGRADE_POD_NAME', { field: 'metadata.name' }],
    ['NUO_POD_UID', 'SYSTEM_UPGRADE_POD_UID', { field: 'metadata.uid' }],
    ['NUO_PLAN_NAME', 'SYSTEM_UPGRADE_PLAN_NAME', plan],
    ['NUO_PLAN_HASH', 'SYSTEM_UPGRADE_PLAN_LATEST_HASH', hash],
    ['NUO_PLAN_VERSION', 'SYSTEM_UPGRADE_PLAN_LATEST_VERSION', version],
  ];
  const env = (name: string, v: (typeof pairs)[number][2]): V1EnvVar =>
    typeof v === 'object' ? fieldEnv(name, v.field) : { name, value: v };
  return [...pairs.map(([nuo, , v]) => env(nuo, v)), ...pairs.map(([, suc, v]) => env(suc, v))];
}

/** SUC's default for the upgrade container: privileged, and allowed to reboot the node. */
const DEFAULT_UPGRADE_CONTEXT: V1SecurityContext = {
  privileged: true,
  capabilities: { add: ['CAP_SYS_BOOT'] },
};

function container(
  name: 'prepare' | 'upgrade',
  spec: ContainerSpec,
  { plan, version, hash }: Pick<JobInput, 'plan' | 'version' | 'hash'>,
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
  const securityContext = spec.securityContext ?? (name === 'upgrade' ? DEFAULT_UPGRADE_CONTEXT : undefined);
  return {
    name,
    image: imageAt(spec.image, version),
    imagePullPolicy: 'IfNotPresent',
    ...(spec.command ? { command: spec.command } : {}),
    ...(spec.args ? { args: spec.args } : {}),
    env: [...planEnv(plan.name, hash, version), ...((spec.envs ?? []) as V1EnvVar[])],
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
          { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
          { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
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

export function buildJob(input: JobInput): V1Job {
  const { plan, node, version, hash } = input;
  const spec = plan.spec;
  if (!spec.upgrade) throw new Error(`Plan ${plan.namespace}/${plan.name} has no upgrade container`);
  const exclusive = spec.exclusive ?? false;
  const labels = {
    ...withoutKeys(plan.labels, ['nuo.dev/', 'plan.nuo.dev/']),
    [JobLabels.plan]: plan.name,
    [JobLabels.node]: node.name,
    [JobLabels.hash]: hash,
    [JobLabels.exclusive]: String(exclusive),
  };
  const annotations = {
    ...withoutKeys(plan.annotations, ['nuo.dev/', 'kubectl.kubernetes.io/']),
    [JobAnnotations.version]: version,
    [JobAnnotations.bootId]: node.bootId,
  };
  const hostname = node.hostname ?? node.name;
  // Not two of this Plan's Jobs on a node, or for an exclusive Plan not two exclusive Plans' (SUC's).
  const antiAffinity = exclusive
    ? { key: JobLabels.exclusive, operator: 'In', values: ['true'] }
    : { key: JobLabels.plan, operator: 'In', values: [plan.name] };
  const deadline = activeDeadline(spec.jobActiveDeadlineSecs);
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: jobName(plan.name, node.name, hash),
      namespace: plan.namespace,
      labels,
      annotations,
      ownerReferences: [
        {
          apiVersion: `${API_GROUP}/${API_VERSION}`,
          kind: PLAN.kind,
          name: plan.name,
          uid: plan.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      backoffLimit: 2,
      ...(deadline === undefined ? {} : { activeDeadlineSeconds: deadline }),
      ttlSecondsAfterFinished: ttlAfterFinished(spec.postCompleteDelay),
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
          ...(spec.prepare ? { initContainers: [container('prepare', spec.prepare, input)] } : {}),
          containers: [container('upgrade', spec.upgrade, input)],
          volumes: volumes(spec),
        },
      },
    },
  };
}
