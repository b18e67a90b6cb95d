/**
 * The operator process's settings from defaults < a file (YAML or JSON) < environment (NUO_*) < flags,
 * validated at start: every problem is reported at once, by the name the user wrote, and nothing starts.
 * The settings of every Plan's Job also take SUC's environment names (SYSTEM_UPGRADE_JOB_*), below NUO_*,
 * so a SUC controller's environment carries over.
 * Only process settings live here; how and when nodes are updated (budgets, timeouts, soak, drain, hooks,
 * windows) lives in UpdatePolicies, one per pool, so it can differ between pools and change without a
 * restart. A pool setting given to the operator is refused with the policy field it moved to.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_NAMESPACE } from '../api/keys.ts';
import { JOB_DEFAULTS, type JobSettings } from '../plan/job.ts';
import { type CalendarClock, REAL_CLOCK } from '../policy/calendar-clock.ts';
import { parseDuration } from '../util/duration.ts';
import { parseRfc3339 } from '../util/rfc3339.ts';

export interface OperatorConfig {
  /** Namespace of the Lease and the slot ledger. */
  namespace: string;
  /** Cluster-wide pause: nothing new is admitted in any pool (an emergency brake over every policy). */
  paused: boolean;
  /** Evictions in flight per node drained (how hard this process drives the API server). */
  drainConcurrency: number;
  /** How often each UpdatePolicy's Prometheus is asked whether an alert blocks its pool. */
  blockerIntervalMs: number;
  /** How often each Plan's channel is asked for the latest version and its secrets read again. */
  planPollingIntervalMs: number;
  /**
   * The namespace whose SUC Plans (upgrade.cattle.io/v1) nuo runs in place, as SUC's controller ran
   * those of its own namespace; empty: SUC's Plans are not read.
   */
  sucPlansNamespace: string;
  /** Every Plan's Job (job.ts's JobSettings). */
  jobActiveDeadlineSeconds: number;
  jobActiveDeadlineSecondsMax: number;
  jobBackoffLimit: number;
  jobPrivileged: boolean;
  jobImagePullPolicy: JobSettings['imagePullPolicy'];
  jobTtlSecondsAfterFinish: number;
  jobPodReplacementPolicy: JobSettings['podReplacementPolicy'];
  /** For `nuo whatif run` only: the calendar instant windows are read at when the clock starts; empty: real time. */
  simClockOrigin: string;
  /** For `nuo whatif run` only: the real instant the simulated calendar starts at; empty: when the operator starts. */
  simClockStart: string;
  /** For `nuo whatif run` only: how many times faster than real time the simulated calendar runs. */
  simClockSpeed: number;
}

type Kind = 'string' | 'duration' | 'bool' | 'int' | 'count' | 'number';
interface Field {
  key: keyof OperatorConfig;
  flag: string;
  kind: Kind;
  default: string;
  help: string;
  /** The only values accepted, for a string. */
  values?: readonly string[];
  /** SUC's environment variable of the same meaning, read below NUO_*. */
  sucEnv?: string;
}

/** SUC's controller-wide Job settings: flag, SUC's variable, kind, default (SUC's), help. */
const JOB_FIELDS: Field[] = [
  {
    key: 'jobActiveDeadlineSeconds',
    flag: 'job-active-deadline-seconds',
    sucEnv: 'SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS',
    kind: 'count',
    default: String(JOB_DEFAULTS.activeDeadlineSeconds),
    help: "a Plan's Job's activeDeadlineSeconds when the Plan sets no jobActiveDeadlineSecs (0: none)",
  },
  {
    key: 'jobActiveDeadlineSecondsMax',
    flag: 'job-active-deadline-seconds-max',
    sucEnv: 'SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS_MAX',
    kind: 'count',
    default: String(JOB_DEFAULTS.activeDeadlineSecondsMax),
    help: "the most activeDeadlineSeconds a Plan's Job gets, one without a deadline too (0: no maximum)",
  },
  {
    key: 'jobBackoffLimit',
    flag: 'job-backoff-limit',
    sucEnv: 'SYSTEM_UPGRADE_JOB_BACKOFF_LIMIT',
    kind: 'count',
    default: String(JOB_DEFAULTS.backoffLimit),
    help: "a Plan's Job's backoffLimit (pod failures retried before the Job fails)",
  },
  {
    key: 'jobPrivileged',
    flag: 'job-privileged',
    sucEnv: 'SYSTEM_UPGRADE_JOB_PRIVILEGED',
    kind: 'bool',
    default: String(JOB_DEFAULTS.privileged),
    help: 'the upgrade container runs privileged when its Plan gives it no securityContext',
  },
  {
    key: 'jobImagePullPolicy',
    flag: 'job-image-pull-policy',
    sucEnv: 'SYSTEM_UPGRADE_JOB_IMAGE_PULL_POLICY',
    kind: 'string',
    values: ['Always', 'IfNotPresent', 'Never'],
    default: JOB_DEFAULTS.imagePullPolicy,
    help: "the imagePullPolicy of a Plan's Job's containers",
  },
  {
    key: 'jobTtlSecondsAfterFinish',
    flag: 'job-ttl-seconds-after-finish',
    sucEnv: 'SYSTEM_UPGRADE_JOB_TTL_SECONDS_AFTER_FINISH',
    kind: 'count',
    default: String(JOB_DEFAULTS.ttlSecondsAfterFinished),
    help: "a Plan's finished Job's ttlSecondsAfterFinished (a minute past postCompleteDelay if longer)",
  },
  {
    key: 'jobPodReplacementPolicy',
    flag: 'job-pod-replacement-policy',
    sucEnv: 'SYSTEM_UPGRADE_JOB_POD_REPLACEMENT_POLICY',
    kind: 'string',
    values: ['TerminatingOrFailed', 'Failed'],
    default: JOB_DEFAULTS.podReplacementPolicy,
    help: "a Plan's Job's podReplacementPolicy",
  },
];

export const FIELDS: Field[] = [
  {
    key: 'namespace',
    flag: 'namespace',
    kind: 'string',
    default: DEFAULT_NAMESPACE,
    help: 'namespace of the leader Lease and the slot ledger',
  },
  {
    key: 'paused',
    flag: 'paused',
    kind: 'bool',
    default: 'false',
    help: 'admit no node in any pool (cluster-wide pause; attempts in progress finish)',
  },
  {
    key: 'drainConcurrency',
    flag: 'drain-concurrency',
    kind: 'int',
    default: '50',
    help: 'evictions in flight per node',
  },
  {
    key: 'blockerIntervalMs',
    flag: 'blocker-interval',
    kind: 'duration',
    default: '15s',
    help: "how often an UpdatePolicy's Prometheus is asked whether an alert blocks its pool, and nuo looks for CLUO's, FLUO's or SUC's own controller",
  },
  {
    key: 'planPollingIntervalMs',
    flag: 'plan-polling-interval',
    kind: 'duration',
    default: '15m',
    help: "how often a Plan's channel is asked for its latest version and its secrets read again",
  },
  {
    key: 'sucPlansNamespace',
    flag: 'suc-plans-namespace',
    kind: 'string',
    default: '',
    help: "run system-upgrade-controller's Plans (upgrade.cattle.io/v1) of this namespace in place, SUC's controller stopped (empty: not read)",
  },
  ...JOB_FIELDS,
  {
    key: 'simClockOrigin',
    flag: 'sim-clock-origin',
    kind: 'string',
    default: '',
    help: 'for nuo whatif run only: read maintenance windows and scheduled budgets on a simulated clock showing this RFC 3339 time at --sim-clock-start (empty: the real clock)',
  },
  {
    key: 'simClockStart',
    flag: 'sim-clock-start',
    kind: 'string',
    default: '',
    help: 'for nuo whatif run only: the real RFC 3339 instant the simulated clock shows --sim-clock-origin (empty: when the operator starts)',
  },
  {
    key: 'simClockSpeed',
    flag: 'sim-clock-speed',
    kind: 'number',
    default: '1',
    help: 'for nuo whatif run only: how many times faster than real time the simulated clock runs (1 to 1000)',
  },
];

/** The clock windows are read on: the simulated one the sim-clock settings give, else the real one. */
export function calendarClock(c: OperatorConfig, started: number): CalendarClock {
  const origin = parseRfc3339(c.simClockOrigin);
  if (origin === undefined) return REAL_CLOCK;
  return { origin, start: parseRfc3339(c.simClockStart) ?? started, speed: c.simClockSpeed };
}

/** The settings of every Plan's Job, from the operator's. */
export function jobSettings(c: OperatorConfig): JobSettings {
  return {
    activeDeadlineSeconds: c.jobActiveDeadlineSeconds,
    activeDeadlineSecondsMax: c.jobActiveDeadlineSecondsMax,
    backoffLimit: c.jobBackoffLimit,
    privileged: c.jobPrivileged,
    imagePullPolicy: c.jobImagePullPolicy,
    ttlSecondsAfterFinished: c.jobTtlSecondsAfterFinish,
    podReplacementPolicy: c.jobPodReplacementPolicy,
  };
}

/**
 * Settings an operator flag once held that are an UpdatePolicy's now → the policy field. Named in the
 * refusal, so an old command line or settings file says where its setting went.
 */
export const MOVED_TO_POLICY: Readonly<Record<string, string>> = {
  'max-unavailable': 'spec.maxUnavailable',
  'node-selector': 'spec.nodeSelector',
  'min-grant-spacing': 'spec.reboot.minGrantSpacing',
  'drain-timeout': 'spec.drain.timeout',
  'reboot-timeout': 'spec.reboot.rebootTimeout',
  'return-timeout': 'spec.reboot.returnTimeout',
  soak: 'spec.reboot.soak',
  'before-reboot-annotations': 'spec.reboot.beforeRebootAnnotations',
  'after-reboot-annotations': 'spec.reboot.afterRebootAnnotations',
  'retry-backoff': 'spec.reboot.retryBackoff',
  'retry-backoff-max': 'spec.reboot.retryBackoffMax',
  'max-ineffective-reboots': 'spec.reboot.maxIneffectiveReboots',
  'drain-force': 'spec.drain.force',
  'drain-delete-emptydir-data': 'spec.drain.deleteEmptyDirData',
  'drain-grace-period': 'spec.drain.gracePeriodSeconds',
  'pending-taint': 'spec.reboot.pendingTaint',
};

/** The refusal of a setting that moved to UpdatePolicies, or undefined for one that never existed. */
export function movedSetting(name: string): string | undefined {
  // As a flag (drain-timeout), a settings-file key (drainTimeoutMs) or an environment variable's tail.
  const squash = (s: string) => s.toLowerCase().replaceAll(/[-_]/g, '');
  const flag = Object.keys(MOVED_TO_POLICY).find((f) => squash(f) === squash(name).replace(/ms$/, ''));
  const field = flag && MOVED_TO_POLICY[flag];
  return field
    ? `"${name}" is an UpdatePolicy setting now (${field}): set it in the policy of the pool (docs/policies.md)`
    : undefined;
}

const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const envName = (flag: string) => `NUO_${flag.toUpperCase().replaceAll('-', '_')}`;

function convert(field: Field, raw: unknown, source: string, problems: string[]): unknown {
  const where = `${source} ${field.flag}`;
  const text = String(raw);
  switch (field.kind) {
    case 'string':
      if (field.values && !field.values.includes(text)) {
        problems.push(`${where}: must be one of ${field.values.join(', ')}, got "${text}"`);
        return undefined;
      }
      return text;
    case 'duration':
      try {
        return parseDuration(text);
      } catch (err) {
        problems.push(`${where}: ${(err as Error).message}`);
        return undefined;
      }
    case 'bool':
      if (text === 'true' || text === 'false') return text === 'true';
      problems.push(`${where}: must be true or false, got "${text}"`);
      return undefined;
    case 'int':
      if (/^-?\d+$/.test(text)) return Number(text);
      problems.push(`${where}: must be an integer, got "${text}"`);
      return undefined;
    case 'number':
      if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
      problems.push(`${where}: must be a number, got "${text}"`);
      return undefined;
    case 'count':
      // At most an int32: the Job fields these land in are.
      if (/^\d+$/.test(text) && Number(text) <= 2 ** 31 - 1) return Number(text);
      problems.push(`${where}: must be a whole number from 0 to 2147483647, got "${text}"`);
      return undefined;
  }
}

export interface ConfigSources {
  flags?: Record<string, string | boolean | undefined>;
  env?: Record<string, string | undefined>;
  file?: string;
}

/** The settings file's entries, each problem of it (unknown or moved settings) in `problems`. */
function fileSettings(file: string, problems: string[]): Map<Field, unknown> {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`invalid configuration: cannot read ${file}: ${(err as Error).message}`);
  }
  if (doc !== null && doc !== undefined && (typeof doc !== 'object' || Array.isArray(doc))) {
    throw new Error(`invalid configuration: ${file} must hold a mapping of settings`);
  }
  const settings = new Map<Field, unknown>();
  for (const [k, v] of Object.entries((doc ?? {}) as Record<string, unknown>)) {
    const field = FIELDS.find((f) => f.flag === k || f.key === k);
    if (field) settings.set(field, v);
    else problems.push(`${file}: ${movedSetting(k) ?? `unknown setting "${k}"`}`);
  }
  return settings;
}

/** Builds and validates the configuration; throws one error listing every problem. */
export function loadOperatorConfig({ flags = {}, env = {}, file }: ConfigSources): OperatorConfig {
  const problems: string[] = [];
  const raw = new Map<Field, { value: unknown; source: string }>();
  for (const f of FIELDS) raw.set(f, { value: f.default, source: 'default' });
  if (file) for (const [f, value] of fileSettings(file, problems)) raw.set(f, { value, source: file });
  for (const name of Object.keys(env)) {
    const moved = Object.keys(MOVED_TO_POLICY).find((flag) => envName(flag) === name);
    if (moved) problems.push(`env ${name}: ${movedSetting(moved)}`);
  }
  for (const f of FIELDS) {
    const suc = f.sucEnv === undefined ? undefined : env[f.sucEnv];
    if (suc !== undefined && f.sucEnv) raw.set(f, { value: suc, source: `env ${f.sucEnv}` });
    const e = env[envName(f.flag)];
    if (e !== undefined) raw.set(f, { value: e, source: `env ${envName(f.flag)}` });
    const v = flags[f.flag];
    if (v !== undefined) raw.set(f, { value: v, source: 'flag' });
  }
  const config = {} as Record<string, unknown>;
  for (const [field, { value, source }] of raw) config[field.key] = convert(field, value, source, problems);
  const c = config as unknown as OperatorConfig;
  if (problems.length === 0) {
    if (c.drainConcurrency < 1) problems.push('drain-concurrency: must be at least 1');
    if (c.blockerIntervalMs <= 0) problems.push('blocker-interval: must be greater than 0');
    if (c.planPollingIntervalMs < 1000) problems.push('plan-polling-interval: must be at least 1s');
    if (!NAMESPACE.test(c.namespace))
      problems.push(`namespace: "${c.namespace}" is not a valid namespace name`);
    if (c.simClockOrigin !== '' && parseRfc3339(c.simClockOrigin) === undefined)
      problems.push(`sim-clock-origin: "${c.simClockOrigin}" is not an RFC 3339 time (2026-11-27T09:00:00Z)`);
    if (c.simClockStart !== '' && parseRfc3339(c.simClockStart) === undefined)
      problems.push(`sim-clock-start: "${c.simClockStart}" is not an RFC 3339 time (2026-11-27T09:00:00Z)`);
    if (c.simClockStart !== '' && c.simClockOrigin === '')
      problems.push('sim-clock-start: needs sim-clock-origin (the time the simulated clock shows then)');
    if (!(c.simClockSpeed >= 1 && c.simClockSpeed <= 1000))
      problems.push(`sim-clock-speed: must be from 1 to 1000, got ${c.simClockSpeed}`);
    if (c.sucPlansNamespace !== '' && !NAMESPACE.test(c.sucPlansNamespace))
      problems.push(`suc-plans-namespace: "${c.sucPlansNamespace}" is not a valid namespace name`);
  }
  if (problems.length > 0) throw new Error(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
  return c;
}

export function configUsage(): string {
  return FIELDS.map(
    (f) =>
      `  --${f.flag.padEnd(28)} ${f.help} (default ${f.default || '""'}; env ${envName(f.flag)}${f.sucEnv ? ` or ${f.sucEnv}` : ''})`,
  ).join('\n');
}
