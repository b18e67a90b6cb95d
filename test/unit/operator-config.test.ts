import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { calendarClock, jobSettings, loadOperatorConfig, movedSetting } from '../../src/operator/config.ts';
import { JOB_DEFAULTS } from '../../src/plan/job.ts';
import { REAL_CLOCK } from '../../src/policy/calendar-clock.ts';

const dir = mkdtempSync(join(tmpdir(), 'nuo-config-test-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

test('defaults: the ledger in nuo-system, not paused, 50 evictions in flight, blockers asked every 15 s, channels every 15 min', () => {
  assert.deepEqual(loadOperatorConfig({}), {
    namespace: 'nuo-system',
    paused: false,
    drainConcurrency: 50,
    blockerIntervalMs: 15_000,
    planPollingIntervalMs: 900_000,
    sucPlansNamespace: '',
    jobActiveDeadlineSeconds: 600,
    jobActiveDeadlineSecondsMax: 0,
    jobBackoffLimit: 2,
    jobPrivileged: true,
    jobImagePullPolicy: 'IfNotPresent',
    jobTtlSecondsAfterFinish: 900,
    jobPodReplacementPolicy: 'TerminatingOrFailed',
    simClockOrigin: '',
    simClockStart: '',
    simClockSpeed: 1,
  });
});

test('file < environment < flags', () => {
  const path = file('c.yaml', 'namespace: ops\ndrainConcurrency: 10\nblocker-interval: 1m\n');
  const fromFile = loadOperatorConfig({ file: path });
  assert.equal(fromFile.namespace, 'ops');
  assert.equal(fromFile.drainConcurrency, 10);
  assert.equal(fromFile.blockerIntervalMs, 60_000);
  const fromEnv = loadOperatorConfig({ file: path, env: { NUO_NAMESPACE: 'ops-env', NUO_PAUSED: 'true' } });
  assert.equal(fromEnv.namespace, 'ops-env');
  assert.equal(fromEnv.paused, true);
  const fromFlags = loadOperatorConfig({
    file: path,
    env: { NUO_NAMESPACE: 'ops-env' },
    flags: { namespace: 'ops-flag' },
  });
  assert.equal(fromFlags.namespace, 'ops-flag');
});

test('every problem is reported at once, by the name the user wrote', () => {
  const path = file('bad.yaml', 'drainConcurrency: 0\nwhatever: 1\n');
  assert.throws(
    () =>
      loadOperatorConfig({
        file: path,
        env: { NUO_PAUSED: 'yes' },
        flags: { 'blocker-interval': 'soon', namespace: 'Not_A_Namespace' },
      }),
    (err: Error) => {
      assert.match(err.message, /bad\.yaml: unknown setting "whatever"/);
      assert.match(err.message, /env NUO_PAUSED paused: must be true or false, got "yes"/);
      assert.match(err.message, /flag blocker-interval: invalid duration "soon"/);
      return true;
    },
  );
  assert.throws(
    () => loadOperatorConfig({ flags: { 'drain-concurrency': '0', namespace: 'Not_A_Namespace' } }),
    (err: Error) => {
      assert.match(err.message, /drain-concurrency: must be at least 1/);
      assert.match(err.message, /namespace: "Not_A_Namespace" is not a valid namespace name/);
      return true;
    },
  );
  assert.throws(
    () => loadOperatorConfig({ flags: { 'blocker-interval': '0s' } }),
    /blocker-interval: must be/,
  );
  assert.throws(
    () => loadOperatorConfig({ flags: { 'plan-polling-interval': '10ms' } }),
    /plan-polling-interval: must be at least 1s/,
  );
  assert.throws(() => loadOperatorConfig({ file: join(dir, 'missing.yaml') }), /cannot read .*missing\.yaml/);
  assert.throws(() => loadOperatorConfig({ file: file('list.yaml', '- a\n- b\n') }), /must hold a mapping/);
});

test('a pool setting is refused with the UpdatePolicy field it moved to, from a file or the environment', () => {
  const path = file('old.yaml', 'maxUnavailable: 2\nsoakMs: 1000\ndrain-delete-emptydir-data: true\n');
  assert.throws(
    () => loadOperatorConfig({ file: path, env: { NUO_DRAIN_TIMEOUT: '5m' } }),
    (err: Error) => {
      assert.match(
        err.message,
        /old\.yaml: "maxUnavailable" is an UpdatePolicy setting now \(spec\.maxUnavailable\)/,
      );
      assert.match(err.message, /old\.yaml: "soakMs" is an UpdatePolicy setting now \(spec\.reboot\.soak\)/);
      assert.match(
        err.message,
        /"drain-delete-emptydir-data" is an UpdatePolicy setting now \(spec\.drain\.deleteEmptyDirData\)/,
      );
      assert.match(
        err.message,
        /env NUO_DRAIN_TIMEOUT: "drain-timeout" is an UpdatePolicy setting now \(spec\.drain\.timeout\)/,
      );
      return true;
    },
  );
  assert.equal(movedSetting('retryBackoffMaxMs')?.includes('spec.reboot.retryBackoffMax'), true);
  assert.equal(movedSetting('namespace'), undefined);
  assert.equal(movedSetting('nonsense'), undefined);
});

test("a Plan's Job settings take SUC's environment names, below NUO_* and flags; the defaults are SUC's", () => {
  assert.deepEqual(jobSettings(loadOperatorConfig({})), JOB_DEFAULTS);
  const suc = {
    SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS: '1200',
    SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS_MAX: '3600',
    SYSTEM_UPGRADE_JOB_BACKOFF_LIMIT: '4',
    SYSTEM_UPGRADE_JOB_PRIVILEGED: 'false',
    SYSTEM_UPGRADE_JOB_IMAGE_PULL_POLICY: 'Always',
    SYSTEM_UPGRADE_JOB_TTL_SECONDS_AFTER_FINISH: '60',
    SYSTEM_UPGRADE_JOB_POD_REPLACEMENT_POLICY: 'Failed',
  };
  assert.deepEqual(jobSettings(loadOperatorConfig({ env: suc })), {
    activeDeadlineSeconds: 1200,
    activeDeadlineSecondsMax: 3600,
    backoffLimit: 4,
    privileged: false,
    imagePullPolicy: 'Always',
    ttlSecondsAfterFinished: 60,
    podReplacementPolicy: 'Failed',
  });
  const path = file('job.yaml', 'job-backoff-limit: 7\njobPrivileged: false\n');
  assert.equal(loadOperatorConfig({ file: path }).jobBackoffLimit, 7);
  assert.equal(
    loadOperatorConfig({ file: path, env: suc }).jobBackoffLimit,
    4,
    "SUC's environment over the file",
  );
  const nuo = loadOperatorConfig({ env: { ...suc, NUO_JOB_BACKOFF_LIMIT: '5' } });
  assert.equal(nuo.jobBackoffLimit, 5, 'NUO_* over SUC’s name');
  const flag = loadOperatorConfig({
    env: { ...suc, NUO_JOB_BACKOFF_LIMIT: '5' },
    flags: { 'job-backoff-limit': '6', 'job-image-pull-policy': 'Never' },
  });
  assert.equal(flag.jobBackoffLimit, 6, 'a flag over both');
  assert.equal(flag.jobImagePullPolicy, 'Never');
});

test('bad Job settings are each refused by the name written, at once', () => {
  assert.throws(
    () =>
      loadOperatorConfig({
        env: {
          SYSTEM_UPGRADE_JOB_BACKOFF_LIMIT: '-1',
          SYSTEM_UPGRADE_JOB_PRIVILEGED: 'maybe',
          SYSTEM_UPGRADE_JOB_IMAGE_PULL_POLICY: 'Sometimes',
          SYSTEM_UPGRADE_JOB_TTL_SECONDS_AFTER_FINISH: '99999999999',
        },
        flags: { 'job-pod-replacement-policy': 'Never' },
      }),
    (err: Error) => {
      assert.match(
        err.message,
        /env SYSTEM_UPGRADE_JOB_BACKOFF_LIMIT job-backoff-limit: must be a whole number/,
      );
      assert.match(
        err.message,
        /env SYSTEM_UPGRADE_JOB_PRIVILEGED job-privileged: must be true or false, got "maybe"/,
      );
      assert.match(
        err.message,
        /env SYSTEM_UPGRADE_JOB_IMAGE_PULL_POLICY job-image-pull-policy: must be one of Always, IfNotPresent, Never, got "Sometimes"/,
      );
      assert.match(
        err.message,
        /SYSTEM_UPGRADE_JOB_TTL_SECONDS_AFTER_FINISH job-ttl-seconds-after-finish: must be a whole number from 0 to 2147483647/,
      );
      assert.match(
        err.message,
        /flag job-pod-replacement-policy: must be one of TerminatingOrFailed, Failed, got "Never"/,
      );
      return true;
    },
  );
});

test('the simulated clock (nuo whatif run only): origin, start and speed, else the real clock', () => {
  const started = Date.parse('2026-11-27T14:00:00Z');
  assert.equal(calendarClock(loadOperatorConfig({}), started), REAL_CLOCK, 'no origin: the real clock');
  const flags = { 'sim-clock-origin': '2026-11-23T09:00:00+01:00', 'sim-clock-speed': '60' };
  assert.deepEqual(calendarClock(loadOperatorConfig({ flags }), started), {
    origin: Date.parse('2026-11-23T08:00:00Z'),
    start: started,
    speed: 60,
  });
  const pinned = loadOperatorConfig({ flags: { ...flags, 'sim-clock-start': '2026-11-27T13:59:00.500Z' } });
  assert.equal(calendarClock(pinned, started).start, Date.parse('2026-11-27T13:59:00.500Z'));
  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ 'sim-clock-origin': 'Monday 9am' }, /sim-clock-origin: "Monday 9am" is not an RFC 3339 time/],
    [{ 'sim-clock-origin': '2026-11-23' }, /sim-clock-origin: "2026-11-23" is not an RFC 3339 time/],
    [{ 'sim-clock-start': '2026-11-23T09:00:00Z' }, /sim-clock-start: needs sim-clock-origin/],
    [{ 'sim-clock-speed': '0.5' }, /sim-clock-speed: must be from 1 to 1000, got 0.5/],
    [{ 'sim-clock-speed': 'fast' }, /flag sim-clock-speed: must be a number, got "fast"/],
  ];
  for (const [f, message] of bad)
    assert.throws(() => loadOperatorConfig({ flags: f }), message, JSON.stringify(f));
});
