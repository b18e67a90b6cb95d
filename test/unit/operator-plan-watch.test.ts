import assert from 'node:assert/strict';
import test from 'node:test';
import type { Plan } from '../../src/api/plan.ts';
import { NUO_PLANS } from '../../src/api/plan-groups.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import type { PlanSlot } from '../../src/operator/decide/plan-work.ts';
import type { PlanEntry } from '../../src/operator/plans/plan-resolve.ts';
import { planJob } from '../../src/operator/plans/plan-watch.ts';
import { JOB_DEFAULTS } from '../../src/plan/job.ts';
import { node } from './operator-fixtures.ts';

const plan: Plan = {
  apiVersion: 'nuo.dev/v1alpha1',
  kind: 'Plan',
  metadata: { name: 'os', namespace: 'ops', uid: 'u', labels: { team: 'ops' } },
  spec: { version: 'v2', prepare: { image: 'example.com/check' }, upgrade: { image: 'example.com/os' } },
};
const entry: PlanEntry = {
  ref: 'ops/os',
  group: NUO_PLANS,
  name: 'os',
  namespace: 'ops',
  uid: 'u',
  generation: 1,
  plan,
  errors: [],
  version: 'v2',
  hash: 'h2',
};
const slot: PlanSlot = { ref: 'ops/os', hash: 'h2', version: 'v2', prepare: 'none', reboot: false };
const view = (labels: Record<string, string> = {}) => viewNode(node('a', { labels }));
const built = (job: ReturnType<typeof planJob>) => {
  if (job instanceof Error) throw job;
  return job;
};

test("planJob: the prepare Job or the attempt's, for the node as it is (its hostname and OS labels), at the slot's version and hash", () => {
  const prepare = built(planJob(entry, slot, view(), 'prepare', JOB_DEFAULTS));
  assert.deepEqual(
    prepare.spec?.template.spec?.containers.map((c) => [c.name, c.image]),
    [['prepare', 'example.com/check:v2']],
  );
  const upgrade = built(planJob(entry, slot, view(), 'upgrade', JOB_DEFAULTS));
  assert.deepEqual(
    upgrade.spec?.template.spec?.containers.map((c) => c.name),
    ['upgrade'],
  );
  assert.equal(upgrade.metadata?.labels?.team, 'ops', "the Plan's labels");
  const windows = built(
    planJob(
      entry,
      slot,
      view({ 'kubernetes.io/os': 'windows', 'kubernetes.io/hostname': 'host-a' }),
      'upgrade',
      JOB_DEFAULTS,
    ),
  );
  const pod = windows.spec?.template.spec;
  assert.equal(
    pod?.containers[0]?.securityContext?.windowsOptions?.hostProcess,
    true,
    'the node’s OS label read',
  );
  assert.deepEqual(
    pod?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms[0]
      ?.matchExpressions?.[0]?.values,
    ['host-a'],
  );
  assert.equal(
    built(planJob(entry, slot, view({ 'kubernetes.io/os': 'linux' }), 'upgrade', JOB_DEFAULTS)).spec?.template
      .spec?.containers[0]?.securityContext?.privileged,
    true,
  );
});

test('planJob: none for a Plan gone, nor a prepare at a hash the Plan no longer has (the attempt’s own Job is its step’s to check)', () => {
  assert.match(String(planJob(undefined, slot, view(), 'upgrade', JOB_DEFAULTS)), /Plan ops\/os is gone/);
  const moved = { ...entry, hash: 'h3' };
  assert.match(
    String(planJob(moved, slot, view(), 'prepare', JOB_DEFAULTS)),
    /has a new hash since the pass/,
  );
  assert.ok(!(planJob(moved, slot, view(), 'upgrade', JOB_DEFAULTS) instanceof Error));
});
