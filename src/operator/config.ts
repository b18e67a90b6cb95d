/**
 * Operator configuration from defaults < a file (YAML or JSON) < environment (NUO_*) < flags, validated
 * at start: every problem is reported at once, by the name the user wrote, and nothing starts.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_NAMESPACE } from '../api/keys.ts';
import { parseSelector } from '../kube/selector.ts';
import { parseDuration } from '../util/duration.ts';
import { parseMaxUnavailable } from './budget.ts';
import type { DecideConfig } from './decide.ts';

export interface OperatorConfig {
  /** A count ("2") or a percentage of eligible nodes ("10%"). */
  maxUnavailable: string;
  /** Label selector for the nodes nuo manages; "" = all. */
  nodeSelector: string;
  minGrantSpacingMs: number;
  drainTimeoutMs: number;
  /** From the grant until the boot ID changes. */
  rebootTimeoutMs: number;
  /** From the boot ID change until the node is Ready. */
  returnTimeoutMs: number;
  /** How long a returned node must stay Ready before its slot is freed. */
  soakMs: number;
  /** Node annotations that must read "true" before draining (CLUO before-reboot hooks). */
  beforeRebootAnnotations: string[];
  /** Node annotations that must read "true" before the slot is freed (after-reboot hooks). */
  afterRebootAnnotations: string[];
  /** Base of the exponential backoff after a failed attempt (doubles per consecutive failure). */
  retryBackoffMs: number;
  retryBackoffMaxMs: number;
  /** Reboots in a row that leave the need in place before nuo stops rebooting the node (a loop). */
  maxIneffectiveReboots: number;
  drainForce: boolean;
  drainDeleteEmptyDirData: boolean;
  drainGracePeriodSeconds: number;
  drainConcurrency: number;
  /** Namespace of the Lease and the slot ledger. */
  namespace: string;
  /** Cluster-wide pause: nothing new is admitted. */
  paused: boolean;
  /** Taint nodes that wait for a reboot PreferNoSchedule, so evicted pods prefer nodes already done. */
  pendingTaint: boolean;
  /** How often each UpdatePolicy's Prometheus is asked whether an alert blocks its pool. */
  blockerIntervalMs: number;
}

type Kind = 'string' | 'duration' | 'list' | 'bool' | 'int';
interface Field {
  key: keyof OperatorConfig;
  flag: string;
  kind: Kind;
  default: string;
  help: string;
}

export const FIELDS: Field[] = [
  {
    key: 'maxUnavailable',
    flag: 'max-unavailable',
    kind: 'string',
    default: '1',
    help: 'nodes disrupted at once: a count or a percentage of eligible nodes',
  },
  {
    key: 'nodeSelector',
    flag: 'node-selector',
    kind: 'string',
    default: '',
    help: 'label selector of the nodes nuo manages (default all)',
  },
  {
    key: 'minGrantSpacingMs',
    flag: 'min-grant-spacing',
    kind: 'duration',
    default: '0s',
    help: 'minimum time between two grants',
  },
  {
    key: 'drainTimeoutMs',
    flag: 'drain-timeout',
    kind: 'duration',
    default: '10m',
    help: 'give up a drain after this long (then uncordon and retry later)',
  },
  {
    key: 'rebootTimeoutMs',
    flag: 'reboot-timeout',
    kind: 'duration',
    default: '10m',
    help: 'grant → boot ID change; beyond it the node is Failed',
  },
  {
    key: 'returnTimeoutMs',
    flag: 'return-timeout',
    kind: 'duration',
    default: '10m',
    help: 'boot ID change → Ready; beyond it the node is Failed',
  },
  {
    key: 'soakMs',
    flag: 'soak',
    kind: 'duration',
    default: '30s',
    help: 'Ready time required after the reboot before the slot is freed',
  },
  {
    key: 'beforeRebootAnnotations',
    flag: 'before-reboot-annotations',
    kind: 'list',
    default: '',
    help: 'comma-separated annotations that must be "true" before draining',
  },
  {
    key: 'afterRebootAnnotations',
    flag: 'after-reboot-annotations',
    kind: 'list',
    default: '',
    help: 'comma-separated annotations that must be "true" after the reboot',
  },
  {
    key: 'retryBackoffMs',
    flag: 'retry-backoff',
    kind: 'duration',
    default: '1m',
    help: 'wait after a failed attempt (doubles per failure)',
  },
  {
    key: 'retryBackoffMaxMs',
    flag: 'retry-backoff-max',
    kind: 'duration',
    default: '1h',
    help: 'longest wait between attempts',
  },
  {
    key: 'maxIneffectiveReboots',
    flag: 'max-ineffective-reboots',
    kind: 'int',
    default: '3',
    help: 'reboots in a row after which the need is still there before nuo stops rebooting the node (a loop); each waits out the retry backoff first',
  },
  {
    key: 'drainForce',
    flag: 'drain-force',
    kind: 'bool',
    default: 'false',
    help: 'evict pods that no controller manages',
  },
  {
    key: 'drainDeleteEmptyDirData',
    flag: 'drain-delete-emptydir-data',
    kind: 'bool',
    default: 'false',
    help: 'evict pods with emptyDir volumes',
  },
  {
    key: 'drainGracePeriodSeconds',
    flag: 'drain-grace-period',
    kind: 'int',
    default: '-1',
    help: "pod termination grace period (-1: the pod's own)",
  },
  {
    key: 'drainConcurrency',
    flag: 'drain-concurrency',
    kind: 'int',
    default: '50',
    help: 'evictions in flight per node',
  },
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
    help: 'admit no node (cluster-wide pause)',
  },
  {
    key: 'pendingTaint',
    flag: 'pending-taint',
    kind: 'bool',
    default: 'true',
    help: 'taint nodes waiting for a reboot nuo.dev/reboot-pending:PreferNoSchedule, so pods evicted by drains land on nodes already done',
  },
  {
    key: 'blockerIntervalMs',
    flag: 'blocker-interval',
    kind: 'duration',
    default: '15s',
    help: "how often an UpdatePolicy's Prometheus is asked whether an alert blocks its pool",
  },
];

const envName = (flag: string) => `NUO_${flag.toUpperCase().replaceAll('-', '_')}`;
const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

function convert(field: Field, raw: unknown, source: string, problems: string[]): unknown {
  const where = `${source} ${field.flag}`;
  const text = Array.isArray(raw) ? raw.join(',') : String(raw);
  switch (field.kind) {
    case 'string':
      return text;
    case 'duration':
      try {
        return parseDuration(text);
      } catch (err) {
        problems.push(`${where}: ${(err as Error).message}`);
        return undefined;
      }
    case 'list':
      return text
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    case 'bool':
      if (text === 'true' || text === 'false') return text === 'true';
      problems.push(`${where}: must be true or false, got "${text}"`);
      return undefined;
    case 'int':
      if (/^-?\d+$/.test(text)) return Number(text);
      problems.push(`${where}: must be an integer, got "${text}"`);
      return undefined;
  }
}

export interface ConfigSources {
  flags?: Record<string, string | boolean | undefined>;
  env?: Record<string, string | undefined>;
  file?: string;
}

/** Builds and validates the configuration; throws one error listing every problem. */
export function loadOperatorConfig({ flags = {}, env = {}, file }: ConfigSources): OperatorConfig {
  const problems: string[] = [];
  const raw = new Map<Field, { value: unknown; source: string }>();
  for (const f of FIELDS) raw.set(f, { value: f.default, source: 'default' });
  if (file) {
    let doc: unknown;
    try {
      doc = parseYaml(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new Error(`invalid configuration: cannot read ${file}: ${(err as Error).message}`);
    }
    if (doc !== null && doc !== undefined && (typeof doc !== 'object' || Array.isArray(doc))) {
      throw new Error(`invalid configuration: ${file} must hold a mapping of settings`);
    }
    for (const [k, v] of Object.entries((doc ?? {}) as Record<string, unknown>)) {
      const field = FIELDS.find((f) => f.flag === k || f.key === k);
      if (!field) problems.push(`${file}: unknown setting "${k}"`);
      else raw.set(field, { value: v, source: file });
    }
  }
  for (const f of FIELDS) {
    const e = env[envName(f.flag)];
    if (e !== undefined) raw.set(f, { value: e, source: `env ${envName(f.flag)}` });
    const v = flags[f.flag];
    if (v !== undefined) raw.set(f, { value: v, source: 'flag --' });
  }
  const config = {} as Record<string, unknown>;
  for (const [field, { value, source }] of raw)
    config[field.key] = convert(field, value, source === 'flag --' ? 'flag' : source, problems);
  const c = config as unknown as OperatorConfig;
  const converted = problems.length;
  if (typeof c.maxUnavailable === 'string') {
    try {
      parseMaxUnavailable(c.maxUnavailable);
    } catch (err) {
      problems.push(`max-unavailable: ${(err as Error).message}`);
    }
  }
  if (converted === 0) {
    for (const [name, ms] of [
      ['drain-timeout', c.drainTimeoutMs],
      ['reboot-timeout', c.rebootTimeoutMs],
      ['return-timeout', c.returnTimeoutMs],
      ['retry-backoff', c.retryBackoffMs],
    ] as const) {
      if (ms <= 0) problems.push(`${name}: must be greater than 0 (nuo's waits are always bounded)`);
    }
    if (c.retryBackoffMaxMs < c.retryBackoffMs)
      problems.push('retry-backoff-max: must be at least retry-backoff');
    if (c.drainGracePeriodSeconds < -1) problems.push('drain-grace-period: must be -1 or more');
    if (c.drainConcurrency < 1) problems.push('drain-concurrency: must be at least 1');
    if (c.maxIneffectiveReboots < 1) problems.push('max-ineffective-reboots: must be at least 1');
    for (const key of [...c.beforeRebootAnnotations, ...c.afterRebootAnnotations]) {
      if (!LABEL_KEY.test(key)) problems.push(`hook annotation "${key}" is not a valid annotation key`);
    }
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(c.namespace))
      problems.push(`namespace: "${c.namespace}" is not a valid namespace name`);
  }
  if (problems.length > 0) throw new Error(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
  return c;
}

export function configUsage(): string {
  return FIELDS.map(
    (f) => `  --${f.flag.padEnd(28)} ${f.help} (default ${f.default || '""'}; env ${envName(f.flag)})`,
  ).join('\n');
}

/** decide()'s settings from the operator's own: the default pool's (the budget and selector parsed). */
export function decideConfigOf(c: OperatorConfig): DecideConfig {
  return {
    ...c,
    maxUnavailable: parseMaxUnavailable(c.maxUnavailable),
    eligible: parseSelector(c.nodeSelector),
  };
}
