/**
 * The UpdatePolicy custom resource (nuo.dev/v1alpha1, cluster-scoped): one source of truth for its
 * TypeScript types and the OpenAPI schema the API server validates with (crd.ts publishes it). Every rule
 * the API server can check is here — types, bounds, patterns, CEL rules — so a bad policy is refused at
 * `kubectl apply` rather than discovered by the operator; what it cannot check (time zones, cron
 * expressions, regular expressions) the operator reports in the policy's status.
 *
 * One file over 400 lines on purpose: it is the one place the CRD's schema is written, read top to bottom
 * as its reference (spec, then status), each field's type and rules together.
 */
import Type from 'typebox';
import { AGENT_PROTOCOLS } from './keys.ts';

/** Go-style durations, as the operator's flags take them: "90s", "1h30m", "0". */
export const DURATION_PATTERN = '^(0|(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|ms|s|m|h))+)$';

export const duration = (description: string, defaultValue?: string) =>
  Type.String({
    pattern: DURATION_PATTERN,
    maxLength: 32,
    description,
    ...(defaultValue === undefined ? {} : { default: defaultValue }),
  });

/**
 * A count of nodes (at least 1) or a percentage of the pool ("1%" to "100%"). A percentage rounds down
 * but is at least 1, so a small pool still progresses.
 */
const countOrPercent = (description: string, defaultValue?: number) =>
  Type.Union([Type.Integer(), Type.String()], {
    'x-kubernetes-int-or-string': true,
    description,
    ...(defaultValue === undefined ? {} : { default: defaultValue }),
    'x-kubernetes-validations': [
      {
        rule: "type(self) == int ? self >= 1 : self.matches('^(100|[1-9][0-9]?)%$')",
        message: 'must be a count of at least 1 or a percentage from 1% to 100%, e.g. 2 or "10%"',
      },
    ],
  });

const labelKey = Type.String({ minLength: 1, maxLength: 317 });

/**
 * A string enum as Kubernetes schemas write it (`enum`; structural schemas have no `const`), typed as
 * the union of its values.
 */
export const enumOf = <const T extends string>(values: readonly T[], options: Record<string, unknown> = {}) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...options });

/** A map of strings as Kubernetes schemas write it (`additionalProperties`; no `patternProperties`). */
export const stringMap = (maxLength: number, options: Record<string, unknown> = {}) =>
  Type.Unsafe<Record<string, string>>({
    type: 'object',
    additionalProperties: { type: 'string', maxLength },
    ...options,
  });

export const LabelSelector = Type.Object(
  {
    matchLabels: Type.Optional(stringMap(63)),
    matchExpressions: Type.Optional(
      Type.Array(
        Type.Object({
          key: labelKey,
          operator: enumOf(['In', 'NotIn', 'Exists', 'DoesNotExist']),
          values: Type.Optional(Type.Array(Type.String({ maxLength: 63 }), { maxItems: 64 })),
        }),
        { maxItems: 32 },
      ),
    ),
  },
  {
    description: 'A label selector as Kubernetes writes them; empty selects everything.',
    'x-kubernetes-map-type': 'atomic',
  },
);
export type LabelSelector = Type.Static<typeof LabelSelector>;

const timeZone = Type.String({
  maxLength: 64,
  description: 'An IANA time zone, e.g. Europe/Berlin (default UTC).',
});

export const DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const;
export const Day = enumOf(DAYS);
export type Day = Type.Static<typeof Day>;

const clock = (description: string) =>
  Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', description });

export const WeeklyWindow = Type.Object({
  days: Type.Array(Day, { minItems: 1, maxItems: 7, 'x-kubernetes-list-type': 'set' }),
  start: clock('Opens at this local time, "HH:MM" (24 h).'),
  end: clock('Closes at this local time; at or before start, it closes the next day (wraps midnight).'),
  timeZone: Type.Optional(timeZone),
});
export type WeeklyWindow = Type.Static<typeof WeeklyWindow>;

export const CronWindow = Type.Object(
  {
    schedule: Type.String({ minLength: 1, maxLength: 128, description: 'A 5-field cron expression.' }),
    duration: duration('How long the window stays open after each fire time.'),
    timeZone: Type.Optional(timeZone),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: "self.duration != '0' && duration(self.duration) > duration('0s') && duration(self.duration) <= duration('168h')",
        message: 'duration must be more than 0 and at most 168h (a week)',
        fieldPath: '.duration',
      },
    ],
  },
);
export type CronWindow = Type.Static<typeof CronWindow>;

export const Exclusion = Type.Object({
  start: Type.String({
    minLength: 1,
    maxLength: 64,
    description: 'RFC 3339 date-time, or a date (local midnight).',
  }),
  end: Type.String({ minLength: 1, maxLength: 64, description: 'Exclusive end, as start.' }),
  timeZone: Type.Optional(timeZone),
  reason: Type.Optional(Type.String({ maxLength: 256 })),
});
export type Exclusion = Type.Static<typeof Exclusion>;

export const Windows = Type.Object(
  {
    weekly: Type.Optional(Type.Array(WeeklyWindow, { maxItems: 32 })),
    cron: Type.Optional(Type.Array(CronWindow, { maxItems: 32 })),
    exclusions: Type.Optional(Type.Array(Exclusion, { maxItems: 64 })),
  },
  {
    description:
      'When new attempts may start. No weekly or cron window: always. Attempts in progress when a window closes finish.',
  },
);
export type Windows = Type.Static<typeof Windows>;

/** An http(s) URL of a Prometheus server, checked by the API server. */
const prometheusUrl = (description: string) =>
  Type.String({ maxLength: 2048, pattern: '^https?://', description });

const PROMETHEUS_URL_RULE = {
  rule: "isURL(self.url) && url(self.url).getScheme() in ['http', 'https'] && url(self.url).getHost() != ''",
  message: 'url must be an http or https URL with a host, e.g. http://prometheus.monitoring:9090',
  fieldPath: '.url',
};

export const PrometheusBlocker = Type.Object(
  {
    url: prometheusUrl('The Prometheus server, e.g. http://prometheus.monitoring:9090.'),
    alerts: Type.Optional(
      Type.String({
        maxLength: 1024,
        description: 'Regular expression on alertname (whole name); default all.',
      }),
    ),
    matchers: Type.Optional(
      stringMap(1024, { description: 'Labels a firing alert must carry, exactly, to block.' }),
    ),
    ignoreAlerts: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 64 })),
  },
  { 'x-kubernetes-validations': [PROMETHEUS_URL_RULE] },
);
export type PrometheusBlocker = Type.Static<typeof PrometheusBlocker>;

export const PodBlocker = Type.Object({
  selector: LabelSelector,
  namespaceSelector: Type.Optional(LabelSelector),
  scope: Type.Optional(
    enumOf(['Pool', 'Node'], {
      default: 'Pool',
      description:
        "Pool: a matching pod anywhere in the pool holds every admission. Node: it holds only the node it runs on (kured's --blocking-pod-selector).",
    }),
  ),
});
export type PodBlocker = Type.Static<typeof PodBlocker>;

export const Blockers = Type.Object({
  prometheus: Type.Optional(PrometheusBlocker),
  pods: Type.Optional(
    Type.Array(PodBlocker, {
      maxItems: 16,
      description:
        'A running pod matching any of these blocks new attempts: in the whole pool, or (scope Node) on its own node.',
    }),
  ),
});
export type Blockers = Type.Static<typeof Blockers>;

/**
 * A health check on Kubernetes objects: the one named, or every one the selector matches, must exist and
 * make the CEL expression true (`object` is the object as the API server returns it).
 */
export const ObjectHealthCheck = Type.Object(
  {
    apiVersion: Type.String({
      minLength: 1,
      maxLength: 317,
      description: "The objects' apiVersion, e.g. ceph.rook.io/v1.",
    }),
    kind: Type.String({ minLength: 1, maxLength: 63, description: 'Their kind, e.g. CephCluster.' }),
    namespace: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 63,
        description: 'Their namespace; none for cluster-scoped kinds.',
      }),
    ),
    name: Type.Optional(
      Type.String({ minLength: 1, maxLength: 253, description: 'The one object checked.' }),
    ),
    selector: Type.Optional(LabelSelector),
    expression: Type.String({
      minLength: 1,
      maxLength: 4096,
      description:
        "A CEL expression over `object`, true when healthy, e.g. object.status.ceph.health == 'HEALTH_OK'.",
    }),
  },
  {
    'x-kubernetes-validations': [
      { rule: 'has(self.name) != has(self.selector)', message: 'set exactly one of name and selector' },
    ],
  },
);
export type ObjectHealthCheck = Type.Static<typeof ObjectHealthCheck>;

export const PrometheusHealthCheck = Type.Object(
  {
    url: prometheusUrl('The Prometheus server, e.g. http://prometheus.monitoring:9090.'),
    query: Type.String({ minLength: 1, maxLength: 4096, description: 'A PromQL instant query.' }),
    condition: Type.String({
      minLength: 1,
      maxLength: 1024,
      description:
        'Healthy when true for every sample: a comparison with the value ("== 0", "< 0.05") or a CEL expression over `value` (double) and `labels` (map).',
    }),
    whenEmpty: Type.Optional(
      enumOf(['Unhealthy', 'Healthy'], {
        default: 'Unhealthy',
        description: 'What a query that returns no sample means.',
      }),
    ),
  },
  { 'x-kubernetes-validations': [PROMETHEUS_URL_RULE] },
);
export type PrometheusHealthCheck = Type.Static<typeof PrometheusHealthCheck>;

export const HealthCheck = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 63,
      pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
      description: 'Names the check in the status, Events and nuo policy explain.',
    }),
    object: Type.Optional(ObjectHealthCheck),
    prometheus: Type.Optional(PrometheusHealthCheck),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: 'has(self.object) != has(self.prometheus)',
        message: 'set exactly one of object and prometheus',
      },
    ],
  },
);
export type HealthCheck = Type.Static<typeof HealthCheck>;

/** Bounds of spec.readings, as the CRD's rules and the operator check them. */
export const READINGS_BOUNDS = {
  maxAge: { min: '10s', max: '1h', default: '1m' },
  timeout: { min: '1s', max: '5m', default: '10s' },
} as const;

export const Readings = Type.Object(
  {
    maxAge: Type.Optional(
      duration(
        `How old a reading of the health checks, pod blockers or Prometheus may be and still count; an older one holds the pool, as one that failed does (${READINGS_BOUNDS.maxAge.min} to ${READINGS_BOUNDS.maxAge.max}).`,
        READINGS_BOUNDS.maxAge.default,
      ),
    ),
    timeout: Type.Optional(
      duration(
        `How long one reading may take before it counts as failed (${READINGS_BOUNDS.timeout.min} to ${READINGS_BOUNDS.timeout.max}, less than maxAge).`,
        READINGS_BOUNDS.timeout.default,
      ),
    ),
  },
  {
    default: {},
    description:
      "How fresh the readings of the policy's health checks, pod blockers and Prometheus must be, measured on the operator's own clock from when it took them, and how long each read may take.",
    'x-kubernetes-validations': [
      {
        rule: `!has(self.maxAge) || (self.maxAge != '0' && duration(self.maxAge) >= duration('${READINGS_BOUNDS.maxAge.min}') && duration(self.maxAge) <= duration('${READINGS_BOUNDS.maxAge.max}'))`,
        message: `maxAge must be from ${READINGS_BOUNDS.maxAge.min} to ${READINGS_BOUNDS.maxAge.max}`,
        fieldPath: '.maxAge',
      },
      {
        rule: `!has(self.timeout) || (self.timeout != '0' && duration(self.timeout) >= duration('${READINGS_BOUNDS.timeout.min}') && duration(self.timeout) <= duration('${READINGS_BOUNDS.timeout.max}'))`,
        message: `timeout must be from ${READINGS_BOUNDS.timeout.min} to ${READINGS_BOUNDS.timeout.max}`,
        fieldPath: '.timeout',
      },
      {
        rule: `duration(has(self.timeout) && self.timeout != '0' ? self.timeout : '${READINGS_BOUNDS.timeout.default}') < duration(has(self.maxAge) && self.maxAge != '0' ? self.maxAge : '${READINGS_BOUNDS.maxAge.default}')`,
        message:
          'timeout must be less than maxAge: a reading that took longer would be too old when it lands',
        fieldPath: '.timeout',
      },
    ],
  },
);
export type Readings = Type.Static<typeof Readings>;

export const OnDrainFailure = Type.Object(
  {
    action: Type.Optional(enumOf(['Retry', 'Skip'], { default: 'Retry' })),
    afterAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 3 })),
  },
  {
    description:
      'Retry: a node whose drain fails is retried after a growing backoff. Skip: after afterAttempts failed drains it is labelled skipped and the rollout goes on without it.',
  },
);

const nonEmptySelector =
  '(has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0) || ' +
  '(has(self.selector.matchExpressions) && size(self.selector.matchExpressions) > 0)';

export const DrainWaitFor = Type.Object(
  {
    selector: LabelSelector,
    namespaceSelector: Type.Optional(LabelSelector),
    maxWait: duration("How long the pods are waited for, from the start of the node's drain (at most 168h)."),
    afterMaxWait: Type.Optional(
      enumOf(['Evict', 'Fail'], {
        default: 'Evict',
        description:
          'A pod still running when its wait ends: Evict evicts it (through the Eviction API, its PodDisruptionBudget respected); Fail fails the drain, leaving it running (the attempt ends and is retried).',
      }),
    ),
  },
  {
    description:
      'Pods left running until they finish (e.g. batch Jobs) instead of being evicted, bounded by maxWait; the rest of the node drains meanwhile.',
    'x-kubernetes-validations': [
      {
        rule: nonEmptySelector,
        message: 'selector must name at least one label: an empty selector would wait for every pod',
        fieldPath: '.selector',
      },
      {
        rule: "self.maxWait != '0' && duration(self.maxWait) >= duration('1s') && duration(self.maxWait) <= duration('168h')",
        message: 'maxWait must be from 1s to 168h (a week)',
        fieldPath: '.maxWait',
      },
    ],
  },
);
export type DrainWaitFor = Type.Static<typeof DrainWaitFor>;

// Fields with a default are optional: the API server fills them in, and so does the operator
// (policy defaults), for a policy written before a default existed.
export const Drain = Type.Object(
  {
    timeout: Type.Optional(
      duration('A drain not done after this is given up, the node uncordoned and retried later.', '10m'),
    ),
    gracePeriodSeconds: Type.Optional(
      Type.Integer({
        minimum: -1,
        maximum: 86_400,
        default: -1,
        description: "Evicted pods' termination grace period; -1 uses each pod's own.",
      }),
    ),
    deleteEmptyDirData: Type.Optional(Type.Boolean({ default: false })),
    force: Type.Optional(
      Type.Boolean({ default: false, description: 'Delete pods that no controller manages.' }),
    ),
    podSelector: Type.Optional(
      Type.String({
        maxLength: 1024,
        default: '',
        description: 'Only pods matching this label selector are evicted (kubectl drain --pod-selector).',
      }),
    ),
    skipWaitForDeleteTimeoutSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 86_400,
        default: 0,
        description:
          'Stop waiting for a pod whose deletionTimestamp is more than this many seconds ago (e.g. held by a finalizer); it stays on the node. 0 waits for every pod (kubectl drain --skip-wait-for-delete-timeout).',
      }),
    ),
    waitFor: Type.Optional(
      Type.Array(DrainWaitFor, {
        maxItems: 8,
        description:
          'Pods to wait for instead of evicting, each rule with its maxWait; the first rule that matches a pod applies.',
      }),
    ),
    onFailure: Type.Optional(OnDrainFailure),
  },
  {
    default: {},
    description:
      'How a node is drained, and what happens when it cannot be. DaemonSet-managed pods are always left in place (kubectl drain --ignore-daemonsets).',
  },
);
export type Drain = Type.Static<typeof Drain>;

const annotationList = (description: string) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 317 }), {
    maxItems: 16,
    'x-kubernetes-list-type': 'set',
    description,
  });

export const Reboot = Type.Object(
  {
    rebootTimeout: Type.Optional(
      duration('From the grant until the boot ID changes; beyond it the node is Failed.', '10m'),
    ),
    returnTimeout: Type.Optional(
      duration('From the new boot until the node is Ready; beyond it the node is Failed.', '10m'),
    ),
    soak: Type.Optional(
      duration(
        'How long a returned node must stay Ready (and its DaemonSet pods) before its slot is freed.',
        '30s',
      ),
    ),
    minGrantSpacing: Type.Optional(duration('Least time between two admissions in this pool.', '0s')),
    retryBackoff: Type.Optional(duration('Wait after a failed attempt; doubles per failure in a row.', '1m')),
    retryBackoffMax: Type.Optional(duration('Longest wait between attempts.', '1h')),
    failedSlotTTL: Type.Optional(
      duration(
        "A Failed node's attempt is ended and its slot freed after this long, as by nuo release, unless its agent marks reboot-in-progress; absent, a Failed node keeps its slot until it returns or a person releases it.",
      ),
    ),
    maxIneffectiveReboots: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 100,
        default: 3,
        description: 'Reboots in a row that leave the need in place before nuo stops rebooting the node.',
      }),
    ),
    beforeRebootAnnotations: Type.Optional(
      annotationList('Node annotations that must read "true" before draining.'),
    ),
    afterRebootAnnotations: Type.Optional(
      annotationList('Node annotations that must read "true" before the slot is freed.'),
    ),
    pendingTaint: Type.Optional(
      Type.Boolean({
        default: true,
        description: 'Taint waiting nodes PreferNoSchedule, so evicted pods prefer nodes already done.',
      }),
    ),
    maxUptime: Type.Optional(
      Type.String({
        pattern: DURATION_PATTERN,
        maxLength: 32,
        description:
          "Reboot a node whose current boot (its agent's nuo.dev/boot-time) is older than this, plus a spread of up to a tenth of it that each node's name fixes, so nodes booted together come due at different times. Unset: never.",
        'x-kubernetes-validations': [
          {
            rule: "self != '0' && duration(self) >= duration('1h')",
            message: 'maxUptime must be at least 1h',
          },
        ],
      }),
    ),
  },
  { default: {}, description: 'The reboot and the return: timeouts, soak, retries and hooks.' },
);
export type Reboot = Type.Static<typeof Reboot>;

/** A Node condition that, held long enough, asks for a reboot (as node-problem-detector sets them). */
export const RemediationCondition = Type.Object({
  type: Type.String({
    minLength: 1,
    maxLength: 316,
    description: 'The Node condition type, e.g. KernelDeadlock (node-problem-detector).',
  }),
  status: Type.Optional(
    enumOf(['True', 'False', 'Unknown'], {
      default: 'True',
      description: 'The status that asks for a reboot.',
    }),
  ),
  for: Type.Optional(
    duration(
      'How long the condition must have held that status, counted from when the operator first saw it so (its lastTransitionTime is the node clock: a new one starts the count again).',
      '5m',
    ),
  ),
});

export const Remediation = Type.Object(
  {
    conditions: Type.Array(RemediationCondition, {
      minItems: 1,
      maxItems: 16,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
      description: 'A node with any of these conditions held long enough needs a reboot.',
    }),
    maxPerHour: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1000,
        default: 1,
        description: 'Remediation reboots the pool starts in any hour, at most.',
      }),
    ),
  },
  {
    description:
      "Reboot nodes whose conditions say so, through the pool's budget, windows and gates, at most maxPerHour an hour.",
  },
);
export type Remediation = Type.Static<typeof Remediation>;

export const NOTIFY_ON = ['Admitted', 'Completed', 'Failed', 'Blocked', 'Finished', 'Halted'] as const;
export type NotifyOn = (typeof NOTIFY_ON)[number];

/** The Secret, in the operator's namespace, whose keys hold the receivers' URLs (RBAC names it alone). */
export const NOTIFICATIONS_SECRET = 'nuo-notifications';

/**
 * Where a pool's news goes: an HTTP(S) endpoint whose URL is a key of the Secret nuo-notifications in the
 * operator's namespace (a Slack incoming-webhook URL is a credential), the message format, and which news.
 */
export const Notification = Type.Object({
  format: Type.Optional(
    enumOf(['JSON', 'Slack'], {
      default: 'JSON',
      description: 'JSON: the event as a JSON object; Slack: an incoming-webhook message ({"text": ...}).',
    }),
  ),
  secretKey: Type.String({
    minLength: 1,
    maxLength: 253,
    pattern: '^[-._a-zA-Z0-9]+$',
    description: `The key of the Secret ${NOTIFICATIONS_SECRET} (in the operator's namespace) that holds the receiver's URL.`,
  }),
  // Not `on`: YAML 1.1 readers (kubectl) take an unquoted `on` key for the boolean true.
  events: Type.Optional(
    Type.Array(enumOf(NOTIFY_ON), {
      minItems: 1,
      maxItems: NOTIFY_ON.length,
      'x-kubernetes-list-type': 'set',
      default: [...NOTIFY_ON],
      description:
        'Admitted, Completed, Failed (a node failed or was skipped), Blocked (for longer than blockedFor), Finished (no node of the pool waits any more), Halted (the rollout spent its failure budget).',
    }),
  ),
  blockedFor: Type.Optional(duration('How long the pool must be blocked before Blocked is sent.', '1h')),
});
export type Notification = Type.Static<typeof Notification>;

/** kured's DaemonSet as kured's flags name it; its lock is an annotation on that object. */
export const KuredCoexistence = Type.Object(
  {
    daemonSet: Type.Object(
      {
        namespace: Type.String({ minLength: 1, maxLength: 63, default: 'kube-system' }),
        name: Type.String({ minLength: 1, maxLength: 253, default: 'kured' }),
      },
      { description: "kured's --ds-namespace and --ds-name." },
    ),
    lockAnnotation: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 317,
        default: 'weave.works/kured-node-lock',
        description: "kured's --lock-annotation.",
      }),
    ),
    concurrency: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1000,
        default: 1,
        description: "kured's --concurrency: 1 writes a single holder, more a list of holders.",
      }),
    ),
    holdLock: Type.Optional(
      Type.Boolean({
        default: false,
        description:
          "Hold kured's lock while nuo's attempts in this pool run (or are about to), so kured waits; nuo admits nothing while kured holds it.",
      }),
    ),
    lockTTL: Type.Optional(
      duration("The TTL nuo's own hold carries (renewed while held), so kured takes over if nuo dies.", '5m'),
    ),
  },
  {
    description:
      "Run beside kured during a migration: nodes named in kured's lock count as disrupted in this pool's budget.",
  },
);
export type KuredCoexistence = Type.Static<typeof KuredCoexistence>;

/**
 * A rollout in waves: the first admits `initial` nodes, each next one `growth` times as many, each wave
 * starting once every node of the one before has completed (and `pauseBetween` has passed); and a failure
 * budget that halts the pool until a person resumes it.
 */
export const Rollout = Type.Object(
  {
    waves: Type.Optional(
      Type.Object(
        {
          initial: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 10_000,
              default: 1,
              description: 'Nodes of the first wave.',
            }),
          ),
          growth: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 100,
              default: 2,
              description:
                'Each wave has this many times the nodes of the one before (1: waves of one size).',
            }),
          ),
          pauseBetween: Type.Optional(
            duration('Wait after a wave has completed before the next one starts.', '0s'),
          ),
        },
        {
          description:
            'A wave admits at most its size, and the next starts when that many nodes have completed in it; maxUnavailable still caps how many are disrupted at once.',
        },
      ),
    ),
    failureBudget: Type.Optional(
      Type.Object({
        maxFailedAttempts: Type.Integer({
          minimum: 1,
          maximum: 1000,
          description:
            'Failed attempts (aborted, or Failed) in one rollout after which the pool admits nothing (Halted) until nuo policy resume.',
        }),
      }),
    ),
  },
  {
    description:
      'Progressive waves and a failure budget. A rollout lasts from the first node of the pool needing work to the last one done.',
  },
);
export type Rollout = Type.Static<typeof Rollout>;

/** Why an attempt disrupts a node: what a budget of spec.budgets may apply to. */
export const ATTEMPT_REASONS = ['Reboot', 'Plan', 'Remediation', 'Refresh'] as const;
export type AttemptReason = (typeof ATTEMPT_REASONS)[number];

export const ReasonBudget = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' }),
    nodes: countOrPercent(
      'Nodes of the pool disrupted at once while this budget applies (all reasons count).',
    ),
    reasons: Type.Optional(
      Type.Array(enumOf(ATTEMPT_REASONS), {
        minItems: 1,
        maxItems: 4,
        'x-kubernetes-list-type': 'set',
        description: 'The attempts it limits (all when absent): Reboot, Plan, Remediation, Refresh.',
      }),
    ),
    windows: Type.Optional(Windows),
  },
  {
    description:
      'A limit on admissions for some reasons, while its windows are open (always without windows); the tightest one that applies, and maxUnavailable, hold.',
  },
);
export type ReasonBudget = Type.Static<typeof ReasonBudget>;

export const UpdatePolicySpec = Type.Object(
  {
    nodeSelector: Type.Optional(LabelSelector),
    maxUnavailable: Type.Optional(
      countOrPercent('Nodes of the pool disrupted at once (NotReady and cordoned nodes count).', 1),
    ),
    maxUnavailablePerZone: Type.Optional(countOrPercent('Nodes disrupted at once in any one zone.')),
    budgets: Type.Optional(
      Type.Array(ReasonBudget, {
        // Few, as Karpenter's: the API server prices each one's CEL rules by the list's length.
        maxItems: 4,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
        description: 'Karpenter-style budgets per reason and schedule, beside maxUnavailable.',
      }),
    ),
    zoneLabel: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 317,
        default: 'topology.kubernetes.io/zone',
        description: 'The node label that names its zone.',
      }),
    ),
    zoneOrder: Type.Optional(
      enumOf(['Parallel', 'OneAtATime'], {
        default: 'Parallel',
        description: 'OneAtATime: finish one zone before starting the next.',
      }),
    ),
    paused: Type.Optional(Type.Boolean({ default: false, description: 'Admit nothing new in this pool.' })),
    agentProtocol: Type.Optional(
      enumOf(AGENT_PROTOCOLS, {
        default: 'nuo',
        description:
          "The protocol the pool's node agents speak: nuo (nuo's agent), flatcar-update-operator (FLUO's update-agent), container-linux-update-operator (CLUO's) or fleetlock (Zincati or another FleetLock client asking the operator's FleetLock server, its group the pool's name). nuo drains, grants and checks health either way; the other grants cannot be signed.",
      }),
    ),
    windows: Type.Optional(Windows),
    blockers: Type.Optional(Blockers),
    healthChecks: Type.Optional(
      Type.Array(HealthCheck, {
        maxItems: 16,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
        description:
          'Checks that must all pass before each admission and before a finished node frees its slot; one failing, or not evaluated, holds the pool.',
      }),
    ),
    readings: Type.Optional(Readings),
    drain: Type.Optional(Drain),
    reboot: Type.Optional(Reboot),
    remediation: Type.Optional(Remediation),
    notifications: Type.Optional(Type.Array(Notification, { maxItems: 8 })),
    rollout: Type.Optional(Rollout),
    circuitBreaker: Type.Optional(
      Type.Object({
        maxNotReady: countOrPercent('More nodes of the pool NotReady than this: admit nothing.'),
      }),
    ),
    coexistence: Type.Optional(
      Type.Object(
        { kured: Type.Optional(KuredCoexistence) },
        { description: 'Other reboot coordinators running beside nuo on this pool.' },
      ),
    ),
  },
  { description: 'Which nodes this policy holds (its pool), and how and when they are updated.' },
);
export type UpdatePolicySpec = Type.Static<typeof UpdatePolicySpec>;

/** A status condition as the Kubernetes API conventions define it (metav1.Condition). */
export const Condition = Type.Object({
  type: Type.String({ maxLength: 316 }),
  status: enumOf(['True', 'False', 'Unknown']),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  lastTransitionTime: Type.String({ format: 'date-time' }),
  reason: Type.String({ maxLength: 1024, pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$' }),
  message: Type.String({ maxLength: 32_768 }),
});
export type Condition = Type.Static<typeof Condition>;

/** The pool's rollout as the operator counts it (recorded in the slot ledger). */
export const RolloutStatus = Type.Object({
  started: Type.String({ format: 'date-time', description: 'When the rollout started.' }),
  wave: Type.Integer({ minimum: 1, description: 'The current wave, from 1.' }),
  waveSize: Type.Integer({ minimum: 1, description: 'Nodes the current wave admits.' }),
  completedInWave: Type.Integer({ minimum: 0, description: 'Attempts completed in the current wave.' }),
  failedAttempts: Type.Integer({
    minimum: 0,
    description: 'Failed attempts in this rollout since it started or was last resumed.',
  }),
  nextWave: Type.Optional(
    Type.String({ format: 'date-time', description: 'When the current wave may start (its pause).' }),
  ),
});
export type RolloutStatus = Type.Static<typeof RolloutStatus>;

/** The most recent finished attempts whose durations a policy's status keeps. */
export const MAX_DURATION_SAMPLES = 16;

const seconds = (description: string) =>
  Type.Array(Type.Number({ minimum: 0 }), { maxItems: MAX_DURATION_SAMPLES, description });

/** How long the pool's finished attempts took, as the operator measured them: the latest, and medians. */
export const DurationsStatus = Type.Object({
  samples: Type.Integer({ minimum: 0, description: 'Finished attempts measured, in all.' }),
  drainSeconds: seconds(
    'From Draining to the reboot granted, of the latest attempts measured (oldest first).',
  ),
  rebootSeconds: seconds(
    'From the reboot granted to the node back with a new boot ID, of the latest attempts.',
  ),
  returnSeconds: seconds('From the new boot to the node Ready, of the latest attempts.'),
  drainP50Seconds: Type.Optional(Type.Number({ minimum: 0, description: 'The median of drainSeconds.' })),
  rebootP50Seconds: Type.Optional(Type.Number({ minimum: 0, description: 'The median of rebootSeconds.' })),
  returnP50Seconds: Type.Optional(Type.Number({ minimum: 0, description: 'The median of returnSeconds.' })),
});
export type DurationsStatus = Type.Static<typeof DurationsStatus>;

export const UpdatePolicyStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  conditions: Type.Optional(
    Type.Array(Condition, {
      maxItems: 16,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    }),
  ),
  /** Nodes in the pool, by phase (Idle, Pending, Draining, ...). */
  nodes: Type.Optional(Type.Integer({ minimum: 0 })),
  phases: Type.Optional(
    Type.Unsafe<Record<string, number>>({
      type: 'object',
      additionalProperties: { type: 'integer', minimum: 0 },
    }),
  ),
  /** Slots of the pool's budget, and the nodes holding them. */
  budget: Type.Optional(Type.Integer({ minimum: 0 })),
  disrupted: Type.Optional(Type.Integer({ minimum: 0 })),
  holders: Type.Optional(Type.Array(Type.String({ maxLength: 253 }), { maxItems: 5000 })),
  nextWindow: Type.Optional(Type.String({ format: 'date-time' })),
  lastCompletion: Type.Optional(Type.String({ format: 'date-time' })),
  /** The rollout in progress, with spec.rollout; absent when no node of the pool needs work. */
  rollout: Type.Optional(RolloutStatus),
  /** How long the pool's finished attempts took (nuo whatif run predicts with them). */
  durations: Type.Optional(DurationsStatus),
  /** The last `nuo policy resume`: when, and by whom (copied from the policy's annotations). */
  resumed: Type.Optional(
    Type.Object({
      at: Type.String({ format: 'date-time' }),
      by: Type.Optional(Type.String({ maxLength: 1024 })),
    }),
  ),
});
export type UpdatePolicyStatus = Type.Static<typeof UpdatePolicyStatus>;

export interface UpdatePolicy {
  apiVersion: 'nuo.dev/v1alpha1';
  kind: 'UpdatePolicy';
  metadata: {
    name: string;
    generation?: number;
    resourceVersion?: string;
    uid?: string;
    annotations?: Record<string, string>;
  };
  spec: UpdatePolicySpec;
  status?: UpdatePolicyStatus;
}
