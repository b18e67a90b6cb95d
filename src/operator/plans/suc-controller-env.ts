/**
 * SUC's controller-wide Job settings, from the ConfigMap its manifests give its Deployment as environment
 * (`default-controller-env` in its namespace): nuo reads them for SUC's own Plans run in place, so those
 * Jobs are built as SUC built them. Each variable parsed as SUC's job.go parses it (Go's strconv); one
 * that does not parse keeps the operator's setting and is reported, as SUC logs it and keeps its default.
 */
import type { JobSettings } from '../../plan/job.ts';

/** SUC's manifests name it so. */
export const SUC_CONTROLLER_ENV = 'default-controller-env';

/** Go's strconv.ParseBool. */
function goBool(s: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(s)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(s)) return false;
  return undefined;
}

/** Go's strconv.ParseInt(s, 10, bits), as a safe JavaScript integer. */
function goInt(s: string, bits: 32 | 64): number | undefined {
  if (!/^[+-]?\d+$/.test(s)) return undefined;
  const n = BigInt(s);
  const max = (1n << BigInt(bits - 1)) - 1n;
  if (n > max || n < -max - 1n || n > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
  return Number(n);
}

const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;
const REPLACEMENT_POLICIES = ['TerminatingOrFailed', 'Failed'] as const;

/** The settings of SUC's Plans' Jobs: `base` with what SUC's environment sets, and what could not be read. */
export function sucJobSettings(
  base: JobSettings,
  env: Readonly<Record<string, string>>,
): { settings: JobSettings; problems: string[] } {
  const settings = { ...base };
  const problems: string[] = [];
  const take = <T>(name: string, parse: (s: string) => T | undefined, set: (v: T) => void, empty = false) => {
    const raw = env[name];
    if (raw === undefined || (raw === '' && !empty)) return;
    const v = parse(raw);
    if (v === undefined)
      problems.push(`${name}=${JSON.stringify(raw)} does not parse: the operator's setting is kept`);
    else set(v);
  };
  const oneOf =
    <T extends string>(values: readonly T[]) =>
    (s: string) =>
      (values as readonly string[]).includes(s) ? (s as T) : undefined;
  take(
    'SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS',
    (s) => goInt(s, 64),
    (v) => {
      settings.activeDeadlineSeconds = v;
    },
    true,
  );
  take(
    'SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS_MAX',
    (s) => goInt(s, 64),
    (v) => {
      settings.activeDeadlineSecondsMax = v;
    },
    true,
  );
  take(
    'SYSTEM_UPGRADE_JOB_BACKOFF_LIMIT',
    (s) => goInt(s, 32),
    (v) => {
      settings.backoffLimit = v;
    },
    true,
  );
  take(
    'SYSTEM_UPGRADE_JOB_PRIVILEGED',
    goBool,
    (v) => {
      settings.privileged = v;
    },
    true,
  );
  take('SYSTEM_UPGRADE_JOB_IMAGE_PULL_POLICY', oneOf(PULL_POLICIES), (v) => {
    settings.imagePullPolicy = v;
  });
  take(
    'SYSTEM_UPGRADE_JOB_TTL_SECONDS_AFTER_FINISH',
    (s) => goInt(s, 32),
    (v) => {
      settings.ttlSecondsAfterFinished = v;
    },
    true,
  );
  take('SYSTEM_UPGRADE_JOB_POD_REPLACEMENT_POLICY', oneOf(REPLACEMENT_POLICIES), (v) => {
    settings.podReplacementPolicy = v;
  });
  return { settings, problems };
}
