import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sucJobSettings } from '../../src/operator/plans/suc-controller-env.ts';
import { JOB_DEFAULTS } from '../../src/plan/job.ts';
import { SUC_SHIPPED_CONTROLLER_ENV } from '../fixtures/suc-controller-env.ts';

test("SUC's default-controller-env sets its Plans' Jobs as SUC's job.go reads it; what does not parse keeps the operator's setting and says so", () => {
  assert.deepEqual(sucJobSettings(JOB_DEFAULTS, SUC_SHIPPED_CONTROLLER_ENV), {
    settings: {
      ...JOB_DEFAULTS,
      activeDeadlineSeconds: 900,
      backoffLimit: 99,
      imagePullPolicy: 'Always',
      privileged: true,
      ttlSecondsAfterFinished: 900,
    },
    problems: [],
  });
  const table: Array<[string, Record<string, string>, Partial<typeof JOB_DEFAULTS>, RegExp | undefined]> = [
    ['nothing set: the operator settings', {}, {}, undefined],
    ["Go's booleans", { SYSTEM_UPGRADE_JOB_PRIVILEGED: 'F' }, { privileged: false }, undefined],
    [
      'a signed integer',
      { SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS_MAX: '+3600' },
      { activeDeadlineSecondsMax: 3600 },
      undefined,
    ],
    [
      'an empty pull policy is unset (SUC: Getenv != "")',
      { SYSTEM_UPGRADE_JOB_IMAGE_PULL_POLICY: '' },
      {},
      undefined,
    ],
    [
      'an empty deadline does not parse (SUC: LookupEnv, ParseInt)',
      { SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS: '' },
      {},
      /ACTIVE_DEADLINE_SECONDS="" does not parse/,
    ],
    [
      'a duration is not seconds',
      { SYSTEM_UPGRADE_JOB_BACKOFF_LIMIT: '5m' },
      {},
      /BACKOFF_LIMIT="5m" does not parse/,
    ],
    [
      'over int32',
      { SYSTEM_UPGRADE_JOB_TTL_SECONDS_AFTER_FINISH: '2147483648' },
      {},
      /TTL_SECONDS_AFTER_FINISH/,
    ],
    ['yes is not a Go boolean', { SYSTEM_UPGRADE_JOB_PRIVILEGED: 'yes' }, {}, /PRIVILEGED="yes"/],
    [
      'a pull policy Kubernetes has not',
      { SYSTEM_UPGRADE_JOB_IMAGE_PULL_POLICY: 'Sometimes' },
      {},
      /IMAGE_PULL_POLICY="Sometimes"/,
    ],
    [
      'a pod replacement policy',
      { SYSTEM_UPGRADE_JOB_POD_REPLACEMENT_POLICY: 'Failed' },
      { podReplacementPolicy: 'Failed' },
      undefined,
    ],
  ];
  for (const [what, env, want, problem] of table) {
    const got = sucJobSettings(JOB_DEFAULTS, env);
    assert.deepEqual(got.settings, { ...JOB_DEFAULTS, ...want }, what);
    if (problem) assert.match(got.problems.join('\n'), problem, what);
    else assert.deepEqual(got.problems, [], what);
  }
});
