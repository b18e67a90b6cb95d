import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_TIMINGS, planRun } from '../../src/sim/chaos-plan.ts';
import {
  describeUpgrade,
  planUpgrade,
  UPGRADE_REF,
  upgradeBoundMs,
  upgradePlan,
} from '../../src/sim/chaos-upgrade.ts';
import { SimJobAnnotations, SimJobLabels } from '../../src/sim/job-keys.ts';

const seeds = Array.from({ length: 200 }, (_, i) => i + 1);

test('planUpgrade: the seed alone decides it; a new version every run; within its ranges', () => {
  assert.deepEqual(planUpgrade(7, 2), planUpgrade(7, 2), 'the same seed, the same upgrade');
  const all = seeds.map((s) => planUpgrade(s, 2));
  assert.equal(new Set(all.map((u) => u.version)).size, seeds.length, 'each run its own version');
  for (const u of all) {
    assert.ok(u.concurrency >= 1 && u.concurrency <= 2, `concurrency within the budget: ${u.concurrency}`);
    assert.ok(u.jobMs >= 500 && u.jobMs <= 4000, `Jobs of 0.5–4 s: ${u.jobMs}`);
    if (u.reboot) assert.equal(u.prepare, 'drain', 'a Plan that reboots drains');
  }
  // Every kind of upgrade shows up across a campaign.
  for (const prepare of ['drain', 'cordon', 'none'] as const)
    assert.ok(
      all.some((u) => u.prepare === prepare && !u.reboot),
      `some runs ${prepare} without a reboot`,
    );
  assert.ok(all.some((u) => u.reboot));
  assert.ok(all.some((u) => u.concurrency === 1) && all.some((u) => u.concurrency === 2));
  assert.ok(planUpgrade(3, 1).concurrency === 1, 'a budget of 1: concurrency 1');
});

test('the upgrade draws nothing from the fault plan: a seed’s faults are the same with Plans', () => {
  const nodes = ['node-0', 'node-1', 'node-2', 'node-3', 'node-4', 'node-5'];
  const before = planRun(12, nodes, 2, DEFAULT_TIMINGS);
  planUpgrade(12, 2);
  assert.deepEqual(planRun(12, nodes, 2, DEFAULT_TIMINGS), before);
});

test('upgradePlan: the Plan object the run applies', () => {
  const drain = upgradePlan({
    version: 'v1.3.0',
    concurrency: 2,
    prepare: 'drain',
    reboot: true,
    jobMs: 1500,
  });
  assert.equal(`${drain.namespace}/${drain.name}`, UPGRADE_REF);
  assert.equal(drain.annotations?.[SimJobAnnotations.completeDelay], '1500ms', 'its Jobs run 1.5 s');
  assert.deepEqual(
    { ...drain.spec, upgrade: undefined },
    { concurrency: 2, version: 'v1.3.0', drain: { force: true }, reboot: true, upgrade: undefined },
  );
  const cordon = upgradePlan({
    version: 'v1.4.0',
    concurrency: 1,
    prepare: 'cordon',
    reboot: false,
    jobMs: 500,
  });
  assert.equal(cordon.spec.cordon, true);
  assert.equal(cordon.spec.drain, undefined);
  assert.equal(cordon.spec.reboot, undefined);
  const none = upgradePlan({ version: 'v1.5.0', concurrency: 1, prepare: 'none', reboot: false, jobMs: 500 });
  assert.equal(none.spec.cordon, undefined);
  assert.equal(none.spec.drain, undefined);
});

test('upgradePlan with everything on: a prepare Job, a Job that reboots its node, over some nodes only', () => {
  const p = upgradePlan({
    version: 'v1.6.0',
    concurrency: 1,
    prepare: 'cordon',
    reboot: false,
    jobMs: 2000,
    hostReboot: true,
    prepareJob: true,
    nodes: ['node-05', 'node-06'],
  });
  assert.equal(
    p.labels?.[SimJobLabels.rebootsHost],
    'true',
    "the Plan's Jobs carry it: their pods reboot the host",
  );
  assert.deepEqual(p.spec.prepare, { image: 'registry.example/os-prepare', command: ['/prepare'] });
  assert.deepEqual(p.spec.nodeSelector, {
    matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node-05', 'node-06'] }],
  });
  assert.equal(p.spec.reboot, undefined, 'nuo reboots nothing after the Job: the Job did');
  const plain = upgradePlan({
    version: 'v1.7.0',
    concurrency: 1,
    prepare: 'none',
    reboot: false,
    jobMs: 500,
  });
  assert.equal(plain.labels, undefined);
  assert.equal(plain.spec.prepare, undefined);
  assert.equal(plain.spec.nodeSelector, undefined);
});

test('upgradeBoundMs: waves of min(concurrency, budget), each a Job, a reboot if asked, a soak and slack', () => {
  const per = { rebootMs: 3000, soakMs: 1000, slackPerWaveMs: 15_000 };
  const u = { version: 'v1', concurrency: 2, prepare: 'drain' as const, reboot: false, jobMs: 2000 };
  assert.equal(upgradeBoundMs(u, 6, 2, per), 3 * (2000 + 1000 + 15_000));
  assert.equal(upgradeBoundMs(u, 6, 1, per), 6 * (2000 + 1000 + 15_000), 'the budget caps the waves');
  assert.equal(upgradeBoundMs({ ...u, reboot: true }, 5, 2, per), 3 * (2000 + 3000 + 1000 + 15_000));
  const some = { ...u, concurrency: 1, nodes: ['a', 'b'], prepareJob: true, hostReboot: true };
  assert.equal(
    upgradeBoundMs(some, 12, 2, per),
    2 * (2 * 2000 + 3000 + 1000 + 15_000),
    'only its nodes; two Jobs each (prepare, upgrade), the reboot its Job makes',
  );
});

test('describeUpgrade says how it runs', () => {
  assert.equal(
    describeUpgrade({ version: 'v1.9.0', concurrency: 2, prepare: 'drain', reboot: true, jobMs: 1500 }),
    `  upgrade Plan ${UPGRADE_REF} v1.9.0: concurrency 2, drains, reboots after its Job, Jobs of 1.5s`,
  );
});
