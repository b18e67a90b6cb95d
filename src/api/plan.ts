/**
 * The Plan custom resource (nuo.dev/v1alpha1, namespaced): Rancher system-upgrade-controller's Plan with
 * the same field names and meaning, so a SUC user's Plans apply with only apiVersion changed, plus nuo's
 * `reboot`. One source of truth for the TypeScript types and the OpenAPI schema (crd.ts publishes it):
 * every rule the API server can check is here; what it cannot (selector semantics, the window's times and
 * zone, the drain timeout) src/plan/validate.ts reports in the Plan's status.
 *
 * One file just over 400 lines on purpose: it follows SUC's Plan type field by field, so the two are
 * compared side by side.
 */
import Type from 'typebox';
import { Condition, DURATION_PATTERN, duration, enumOf, LabelSelector, stringMap } from './update-policy.ts';

/**
 * An image reference as the container runtimes parse it: [registry[:port]/]path[:tag][@digest]. RE2 and
 * ECMAScript alike read it (the API server checks it in CEL, the tests in JavaScript); no backslashes, so
 * it needs no escaping inside a CEL string.
 */
const DOMAIN_PART = '[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?';
const PATH_PART = '[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*';
export const IMAGE_REFERENCE =
  `^((${DOMAIN_PART}([.]${DOMAIN_PART})*(:[0-9]+)?/)?${PATH_PART}(/${PATH_PART})*)` +
  '(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$';

const name = (description?: string) =>
  Type.String({ minLength: 1, maxLength: 253, ...(description ? { description } : {}) });
const strings = (maxItems: number, maxLength: number) => Type.Array(Type.String({ maxLength }), { maxItems });
const optionalFlag = () => Type.Optional(Type.Boolean());

const KeyRef = Type.Object({ name: Type.Optional(name()), key: name(), optional: optionalFlag() });
const ObjectRef = Type.Object({ name: Type.Optional(name()), optional: optionalFlag() });

/** corev1.EnvVar. */
export const EnvVar = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 256 }),
  value: Type.Optional(Type.String({ maxLength: 65_536 })),
  valueFrom: Type.Optional(
    Type.Object({
      fieldRef: Type.Optional(
        Type.Object({
          fieldPath: Type.String({ minLength: 1, maxLength: 256 }),
          apiVersion: Type.Optional(Type.String({ maxLength: 64 })),
        }),
      ),
      resourceFieldRef: Type.Optional(
        Type.Object({
          resource: Type.String({ minLength: 1, maxLength: 64 }),
          containerName: Type.Optional(Type.String({ maxLength: 63 })),
          divisor: Type.Optional(
            Type.Union([Type.Integer(), Type.String()], {
              'x-kubernetes-int-or-string': true,
            }),
          ),
        }),
      ),
      configMapKeyRef: Type.Optional(KeyRef),
      secretKeyRef: Type.Optional(KeyRef),
    }),
  ),
});
export type EnvVar = Type.Static<typeof EnvVar>;

/** corev1.EnvFromSource. */
export const EnvFromSource = Type.Object({
  prefix: Type.Optional(Type.String({ maxLength: 256 })),
  configMapRef: Type.Optional(ObjectRef),
  secretRef: Type.Optional(ObjectRef),
});
export type EnvFromSource = Type.Static<typeof EnvFromSource>;

/** A host path mounted into the container (SUC's VolumeSpec). */
export const VolumeSpec = Type.Object({
  name: Type.String({
    minLength: 1,
    maxLength: 63,
    pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
    description: "The volume's name in the Job's pod.",
  }),
  source: Type.String({ minLength: 1, maxLength: 4096, description: 'The path on the host.' }),
  destination: Type.String({ minLength: 1, maxLength: 4096, description: 'The path in the container.' }),
});
export type VolumeSpec = Type.Static<typeof VolumeSpec>;

const capabilities = strings(64, 64);

const PROFILE_TYPES = ['RuntimeDefault', 'Unconfined', 'Localhost'] as const;

/** corev1.SeccompProfile and corev1.AppArmorProfile: a Localhost profile names its file, no other does. */
const profile = (what: string) =>
  Type.Object(
    {
      type: enumOf(PROFILE_TYPES),
      localhostProfile: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
    },
    {
      'x-kubernetes-validations': [
        {
          rule: "self.type == 'Localhost' ? has(self.localhostProfile) : !has(self.localhostProfile)",
          message: `${what}: localhostProfile is required with type Localhost, and only with it`,
        },
      ],
    },
  );

const text = (maxLength: number) => Type.Optional(Type.String({ maxLength }));

/** corev1.SecurityContext, every field as the Kubernetes API has it, passed to the Job's container as is. */
export const SecurityContext = Type.Object({
  allowPrivilegeEscalation: optionalFlag(),
  appArmorProfile: Type.Optional(profile('appArmorProfile')),
  capabilities: Type.Optional(
    Type.Object({ add: Type.Optional(capabilities), drop: Type.Optional(capabilities) }),
  ),
  privileged: optionalFlag(),
  procMount: Type.Optional(enumOf(['Default', 'Unmasked'])),
  readOnlyRootFilesystem: optionalFlag(),
  runAsGroup: Type.Optional(Type.Integer({ minimum: 0 })),
  runAsNonRoot: optionalFlag(),
  runAsUser: Type.Optional(Type.Integer({ minimum: 0 })),
  seLinuxOptions: Type.Optional(
    Type.Object({ level: text(256), role: text(256), type: text(256), user: text(256) }),
  ),
  seccompProfile: Type.Optional(profile('seccompProfile')),
  windowsOptions: Type.Optional(
    Type.Object({
      gmsaCredentialSpecName: text(253),
      gmsaCredentialSpec: text(65_536),
      runAsUserName: text(256),
      hostProcess: optionalFlag(),
    }),
  ),
});
export type SecurityContext = Type.Static<typeof SecurityContext>;

export const ContainerSpec = Type.Object({
  image: Type.String({
    minLength: 1,
    maxLength: 512,
    description: "The image; without a tag it runs at the Plan's resolved version ('+' written '-').",
    'x-kubernetes-validations': [
      {
        rule: `self.matches('${IMAGE_REFERENCE}')`,
        message:
          'image must be an image reference: [registry/]name[:tag][@digest], e.g. rancher/k3s-upgrade or registry.example.com/os/upgrade:v1.2.3',
      },
    ],
  }),
  command: Type.Optional(strings(64, 4096)),
  args: Type.Optional(strings(256, 65_536)),
  envs: Type.Optional(Type.Array(EnvVar, { maxItems: 128 })),
  envFrom: Type.Optional(Type.Array(EnvFromSource, { maxItems: 32 })),
  volumes: Type.Optional(Type.Array(VolumeSpec, { maxItems: 32 })),
  securityContext: Type.Optional(SecurityContext),
});
export type ContainerSpec = Type.Static<typeof ContainerSpec>;

export const SecretSpec = Type.Object({
  name: name("A Secret in the Plan's namespace, mounted into every container of the Job."),
  path: Type.Optional(
    Type.String({
      maxLength: 4096,
      description:
        'Where it is mounted; relative paths and the default are under /run/system-upgrade/secrets.',
    }),
  ),
  ignoreUpdates: Type.Optional(
    Type.Boolean({ description: "Leave its data out of the Plan's hash: changes do not re-apply the Plan." }),
  ),
  defaultMode: Type.Optional(Type.Integer({ minimum: 0, maximum: 511 })),
});
export type SecretSpec = Type.Static<typeof SecretSpec>;

/** corev1.Toleration. */
export const Toleration = Type.Object({
  key: Type.Optional(Type.String({ maxLength: 317 })),
  operator: Type.Optional(enumOf(['Exists', 'Equal'])),
  value: Type.Optional(Type.String({ maxLength: 63 })),
  effect: Type.Optional(enumOf(['NoSchedule', 'PreferNoSchedule', 'NoExecute'])),
  tolerationSeconds: Type.Optional(Type.Integer()),
});
export type Toleration = Type.Static<typeof Toleration>;

/** SUC's day names (kured's): a number from 0 (Sunday) to 6, or a name in one of three lengths. */
export const PLAN_DAYS = [
  ...['0', 'su', 'sun', 'sunday', '1', 'mo', 'mon', 'monday', '2', 'tu', 'tue', 'tuesday'],
  ...['3', 'we', 'wed', 'wednesday', '4', 'th', 'thu', 'thursday', '5', 'fr', 'fri', 'friday'],
  ...['6', 'sa', 'sat', 'saturday'],
] as const;

export const PlanWindow = Type.Object(
  {
    days: Type.Optional(Type.Array(enumOf(PLAN_DAYS), { minItems: 1, maxItems: PLAN_DAYS.length })),
    startTime: Type.Optional(Type.String({ maxLength: 16, description: 'e.g. "22:00", "10pm", "3:04pm".' })),
    endTime: Type.Optional(
      Type.String({
        maxLength: 16,
        description: 'Inclusive; at or before startTime, the window wraps midnight.',
      }),
    ),
    timeZone: Type.Optional(Type.String({ maxLength: 64, description: 'An IANA time zone (default UTC).' })),
  },
  { description: 'Jobs start only inside this window (on its days, local time); a started Job runs on.' },
);
export type PlanWindow = Type.Static<typeof PlanWindow>;

export const DrainSpec = Type.Object(
  {
    timeout: Type.Optional(
      Type.Union([Type.Integer(), Type.String()], {
        'x-kubernetes-int-or-string': true,
        description: 'Nanoseconds, or a Go duration ("10m"); a drain not done by then ends the attempt.',
        'x-kubernetes-validations': [
          {
            // CEL strings take no `\.` escape: the pattern's dots are written as [.].
            rule: `type(self) == int ? self >= 0 : self.matches('${DURATION_PATTERN.replaceAll('\\.', '[.]')}')`,
            message: 'timeout must be a count of nanoseconds or a Go duration such as "10m" or "1h30m"',
          },
        ],
      }),
    ),
    gracePeriod: Type.Optional(
      Type.Integer({
        minimum: -1,
        description: "Seconds each evicted pod gets to stop; -1 uses the pod's own.",
      }),
    ),
    deleteLocalData: Type.Optional(Type.Boolean({ description: 'The old name of deleteEmptydirData.' })),
    deleteEmptydirData: Type.Optional(
      Type.Boolean({ description: 'Evict pods with emptyDir volumes (their data is lost); default true.' }),
    ),
    ignoreDaemonSets: Type.Optional(
      Type.Boolean({ description: 'Leave DaemonSet pods running; default true.' }),
    ),
    force: Type.Optional(Type.Boolean({ description: 'Also evict pods that no controller manages.' })),
    disableEviction: Type.Optional(Type.Boolean()),
    skipWaitForDeleteTimeout: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'Do not wait for pods whose deletion started more than this many seconds ago.',
      }),
    ),
    podSelector: Type.Optional(LabelSelector),
  },
  {
    description: "kubectl drain's options; the drain runs in nuo's engine (the Eviction API) before the Job.",
    'x-kubernetes-validations': [
      {
        rule: '!(has(self.deleteLocalData) && has(self.deleteEmptydirData))',
        message: 'set deleteEmptydirData or its old name deleteLocalData, not both',
      },
      {
        rule: '!has(self.disableEviction) || !self.disableEviction',
        message:
          'nuo drains through the Eviction API only: remove disableEviction. A pod its PodDisruptionBudget holds is evicted once the PDB allows it (an unhealthy one at once with unhealthyPodEvictionPolicy: AlwaysAllow on the PDB); set drain.timeout to bound the wait and drain.force for pods without a controller',
        fieldPath: '.disableEviction',
      },
    ],
  },
);
export type DrainSpec = Type.Static<typeof DrainSpec>;

export const PlanSpec = Type.Object(
  {
    concurrency: Type.Optional(
      Type.Integer({
        minimum: 0,
        default: 1,
        description: "Nodes applying this Plan at once, at most; 0 starts on no node (SUC's meaning).",
      }),
    ),
    nodeSelector: Type.Optional(LabelSelector),
    serviceAccountName: Type.Optional(
      name("The Job pod's service account (the namespace's default if unset)."),
    ),
    channel: Type.Optional(
      Type.String({
        maxLength: 2048,
        description:
          "An http(s) URL whose redirect's last path element is the latest version (version wins).",
        'x-kubernetes-validations': [
          {
            rule: "isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHost() != ''",
            message:
              'channel must be an http or https URL with a host, e.g. https://update.k3s.io/v1-release/channels/stable',
          },
        ],
      }),
    ),
    version: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        description: 'The version to apply; the channel is not read.',
      }),
    ),
    secrets: Type.Optional(Type.Array(SecretSpec, { maxItems: 32 })),
    tolerations: Type.Optional(Type.Array(Toleration, { maxItems: 64 })),
    exclusive: Type.Optional(
      Type.Boolean({
        description: "An exclusive Plan's Job never runs beside another exclusive Plan's on a node.",
      }),
    ),
    window: Type.Optional(PlanWindow),
    prepare: Type.Optional(ContainerSpec),
    upgrade: Type.Optional(ContainerSpec),
    cordon: Type.Optional(
      Type.Boolean({ description: 'Cordon the node before the Job (drain implies it).' }),
    ),
    drain: Type.Optional(DrainSpec),
    imagePullSecrets: Type.Optional(Type.Array(Type.Object({ name: name() }), { maxItems: 16 })),
    jobActiveDeadlineSecs: Type.Optional(
      Type.Integer({ description: "The Job's deadline in seconds: unset or negative 600, 0 none." }),
    ),
    postCompleteDelay: Type.Optional(
      duration('After a node completes, how long its slot stays taken before the next node starts.'),
    ),
    postCompleteLabels: Type.Optional(
      stringMap(63, {
        maxProperties: 32,
        description:
          'Labels written on a node once the Plan completed on it; $(LATEST_VERSION) and $(LATEST_HASH) expand.',
      }),
    ),
    priorityClassName: Type.Optional(name()),
    reboot: Type.Optional(
      Type.Boolean({
        description:
          "nuo's agent reboots the node after the Job succeeds, in the same attempt (drained first: drain's options or defaults).",
      }),
    ),
    onFailure: Type.Optional(
      // No schema default: a SUC Plan reads back as it was sent.
      enumOf(['Retry', 'Stop'], {
        description:
          "nuo's. After a node's Job failed: Retry it after the pool's backoff (unset), or Stop the Plan on that node until the Plan changes (SUC's behaviour).",
      }),
    ),
  },
  {
    description: 'What runs on which nodes, at which version, and how many at once.',
    'x-kubernetes-validations': [
      {
        rule: 'has(self.upgrade)',
        message: 'a Plan needs an upgrade container (spec.upgrade with an image)',
      },
      {
        rule: 'has(self.version) || has(self.channel)',
        message: 'a Plan needs a version, or a channel that resolves one',
      },
    ],
  },
);
export type PlanSpec = Type.Static<typeof PlanSpec>;

export const PlanFailure = Type.Object({
  node: Type.String({ maxLength: 253 }),
  error: Type.String({ maxLength: 4096 }),
  at: Type.String({ format: 'date-time' }),
  /** A Job's failure: the Plan's hash and generation it failed at, and its attempt (onFailure Stop reads them). */
  hash: Type.Optional(Type.String({ maxLength: 64 })),
  generation: Type.Optional(Type.Integer()),
  attempt: Type.Optional(Type.String({ maxLength: 64 })),
});
export type PlanFailure = Type.Static<typeof PlanFailure>;

/** SUC's condition types. */
export const PlanConditions = {
  latestResolved: 'LatestResolved',
  validated: 'Validated',
  complete: 'Complete',
} as const;

export const PlanStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  conditions: Type.Optional(
    Type.Array(Condition, {
      maxItems: 16,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    }),
  ),
  latestVersion: Type.Optional(Type.String({ maxLength: 128 })),
  latestHash: Type.Optional(Type.String({ maxLength: 64 })),
  /**
   * The hash system-upgrade-controller gives this Plan at latestVersion (plan/suc-hash.ts): a node whose
   * plan.upgrade.cattle.io/<plan> label holds it was applied by SUC and counts as applied.
   */
  sucLatestHash: Type.Optional(Type.String({ maxLength: 64 })),
  /** Nodes the Plan is being applied to now. */
  applying: Type.Optional(Type.Array(Type.String({ maxLength: 253 }), { maxItems: 5000 })),
  /** Selected nodes that carry the latest hash (nuo's, or SUC's sucLatestHash). */
  complete: Type.Optional(Type.Integer({ minimum: 0 })),
  failed: Type.Optional(Type.Array(PlanFailure, { maxItems: 5000 })),
});
export type PlanStatus = Type.Static<typeof PlanStatus>;

export interface Plan {
  /** nuo's group, or SUC's where the operator adopts SUC's Plans (plan-groups.ts). */
  apiVersion: 'nuo.dev/v1alpha1' | 'upgrade.cattle.io/v1';
  kind: 'Plan';
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    generation?: number;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: PlanSpec;
  status?: PlanStatus;
}
