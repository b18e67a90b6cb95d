/**
 * SUC's Plans (upgrade.cattle.io/v1) run in place: their refs, Jobs, completion label, hash, and the stand
 * down while SUC's controller runs — the pure parts, table by table.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import type { V1Deployment } from '@kubernetes/client-node';
import type { Plan } from '../../src/api/plan.ts';
import { groupOfRef, planGroupOf, planRefOf } from '../../src/api/plan-groups.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import { planDoneLabel, planName } from '../../src/operator/decide/plan-work.ts';
import { foreignJob, jobView } from '../../src/operator/plans/plan-jobs.ts';
import { appliedBy } from '../../src/operator/plans/plan-pass.ts';
import { passPlan, planEntries } from '../../src/operator/plans/plan-resolve.ts';
import { asSuc, planStatus } from '../../src/operator/plans/plan-status.ts';
import { type FoundLock, LockObserver, leaseLock } from '../../src/operator/protocols/foreign-locks.ts';
import { controllerSighting } from '../../src/operator/protocols/protocol-operators.ts';
import { SUC_CONTROLLER } from '../../src/operator/protocols/suc-controller.ts';
import { buildJob } from '../../src/plan/job.ts';
import { node } from './operator-fixtures.ts';

const plan = (apiVersion: Plan['apiVersion'], namespace: string, name: string): Plan => ({
  apiVersion,
  kind: 'Plan',
  metadata: { name, namespace, uid: `${namespace}-${name}`, generation: 1 },
  spec: { version: 'v1', upgrade: { image: 'example.com/os' } },
});
const SUC = 'upgrade.cattle.io/v1';
const NUO = 'nuo.dev/v1alpha1';

test("a ref names SUC's group, so a Plan of each group by one namespace and name are two Plans", () => {
  const cases: [apiVersion: string | undefined, ref: string, done: string][] = [
    [NUO, 'ops/os', 'plan.nuo.dev/os'],
    [undefined, 'ops/os', 'plan.nuo.dev/os'],
    [SUC, 'upgrade.cattle.io:ops/os', 'plan.upgrade.cattle.io/os'],
    ['upgrade.cattle.io/v2', 'upgrade.cattle.io:ops/os', 'plan.upgrade.cattle.io/os'],
  ];
  for (const [apiVersion, ref, done] of cases) {
    const g = planGroupOf(apiVersion);
    assert.equal(planRefOf(g, 'ops', 'os'), ref, `${apiVersion}`);
    assert.equal(groupOfRef(ref), g);
    assert.equal(planName(ref), 'os');
    assert.equal(planDoneLabel(ref), done, `${apiVersion}: the label that records completion`);
  }
});

test("a Plan name is one name across both groups: the first by ref keeps it, SUC's is refused", () => {
  const entries = planEntries(
    [
      plan(SUC, 'system-upgrade', 'os'),
      plan(NUO, 'system-upgrade', 'os'),
      plan(SUC, 'system-upgrade', 'k3s'),
    ],
    () => ({ version: 'v1', hash: 'h' }),
  );
  assert.deepEqual(
    entries.map((e) => [e.ref, e.group.group, e.errors.map((x) => x.field)]),
    [
      ['system-upgrade/os', 'nuo.dev', []],
      ['upgrade.cattle.io:system-upgrade/k3s', 'upgrade.cattle.io', []],
      ['upgrade.cattle.io:system-upgrade/os', 'upgrade.cattle.io', ['metadata.name']],
    ],
  );
  assert.match(
    entries[2]?.errors[0]?.message ?? '',
    /^Plan system-upgrade\/os has this name: .*plan\.upgrade\.cattle\.io\/os hold no namespace/,
  );
});

test("a SUC Plan's Job is owned by it in SUC's group, and read back as that Plan's", () => {
  for (const [apiVersion, ref] of [
    [SUC, 'upgrade.cattle.io:system-upgrade/os'],
    [NUO, 'system-upgrade/os'],
  ] as const) {
    const p = plan(apiVersion, 'system-upgrade', 'os');
    const job = buildJob({
      plan: { apiVersion, ...p.metadata, uid: 'u', spec: p.spec },
      node: { name: 'n1', bootId: 'b' },
      version: 'v1',
      hash: 'h',
    });
    assert.equal(job.metadata?.ownerReferences?.[0]?.apiVersion, apiVersion);
    assert.equal(jobView(job)?.plan, ref, apiVersion);
  }
});

test("a SUC Plan is applied where SUC's label holds SUC's hash (its own hash), whoever wrote it", () => {
  const p = { ref: 'upgrade.cattle.io:ops/os', name: 'os', hash: 'suc-h', sucHash: 'suc-h' };
  const cases: [labels: Record<string, string>, want: ReturnType<typeof appliedBy>][] = [
    [{ 'plan.upgrade.cattle.io/os': 'suc-h' }, 'nuo'],
    [{ 'plan.upgrade.cattle.io/os': 'older' }, undefined],
    [{ 'plan.nuo.dev/os': 'suc-h' }, undefined],
    [{}, undefined],
  ];
  for (const [labels, want] of cases) assert.equal(appliedBy(labels, p), want, JSON.stringify(labels));
});

test("while SUC's controller runs, its group's Plans start nothing and say why; nuo's run on", () => {
  const [nuo, suc] = planEntries([plan(NUO, 'a', 'x'), plan(SUC, 'a', 'y')], () => ({
    version: 'v1',
    hash: 'h',
  }));
  assert.ok(nuo && suc);
  const why =
    'system-upgrade-controller is deployed: Deployment system-upgrade/system-upgrade-controller wants 1 replica(s)';
  const t = Date.parse('2026-11-25T12:00:00Z');
  assert.equal(passPlan(nuo, t, why).ready, true, "nuo's own Plan");
  assert.equal(passPlan(suc, t).ready, true, 'SUC gone');
  const held = passPlan(suc, t, why);
  assert.equal(held.ready, false);
  assert.equal(held.selects({}), false);
  const status = planStatus({
    entry: suc,
    plan: held,
    nodes: [viewNode(node('n1'))],
    managed: () => true,
    ledger: { slots: {} },
    jobs: new Map(),
    now: new Date(t),
  });
  const complete = status.conditions?.find((c) => c.type === 'Complete');
  assert.equal(complete?.status, 'False');
  assert.equal(complete?.reason, 'ControllerRunning');
  // As SUC writes its Plans: a True Validated and LatestResolved without a message, so the MESSAGE column
  // (the first condition with one) shows Complete's; SUC's reasons.
  const byType = Object.fromEntries((status.conditions ?? []).map((c) => [c.type, [c.reason, c.message]]));
  assert.deepEqual(byType.Validated, ['PlanIsValid', '']);
  assert.deepEqual(byType.LatestResolved, ['Version', '']);
  const own = planStatus({
    entry: nuo,
    plan: passPlan(nuo, t),
    nodes: [viewNode(node('n1'))],
    managed: () => true,
    ledger: { slots: {} },
    jobs: new Map(),
    now: new Date(t),
  });
  assert.deepEqual(
    (own.conditions ?? []).find((c) => c.type === 'Validated')?.reason,
    'Valid',
    "nuo's own Plans keep nuo's reasons and messages",
  );
  assert.match(
    complete?.message ?? '',
    /while system-upgrade-controller runs \(.*wants 1 replica.*\): scale it to zero/,
  );
});

test("SUC's controller is seen by its held Lease or a Deployment wanting replicas, in any namespace", () => {
  const now = Date.parse('2026-11-25T12:00:00Z');
  const lease = (renewed: number, holder = 'suc-pod'): FoundLock =>
    leaseLock({
      metadata: {
        name: 'system-upgrade-controller',
        namespace: 'system-upgrade',
        resourceVersion: String(renewed),
      },
      spec: { holderIdentity: holder, leaseDurationSeconds: 15, renewTime: new Date(renewed) },
    });
  // Held by its record's last change as this process saw it: renewed 1 s before this look, or not since 60 s.
  const held = (l: FoundLock) => {
    const clock = { at: 0 };
    const observer = new LockObserver(() => clock.at);
    observer.observe([l]);
    clock.at = now - Date.parse(l.record?.renewTime ?? '');
    return observer.observe([l])(l);
  };
  const deployment = (replicas: number, namespace = 'cattle-system'): V1Deployment => ({
    metadata: { name: 'system-upgrade-controller', namespace },
    spec: { replicas, selector: {}, template: {} },
  });
  const cases: [string, FoundLock[], V1Deployment[], RegExp | undefined][] = [
    ['nothing', [], [], undefined],
    ['scaled to zero, its Lease expired', [lease(now - 60_000)], [deployment(0)], undefined],
    [
      'its Lease held',
      [lease(now - 1000)],
      [],
      /Lease system-upgrade\/system-upgrade-controller is held by suc-pod/,
    ],
    [
      'deployed in another namespace',
      [],
      [deployment(1)],
      /Deployment cattle-system\/system-upgrade-controller wants 1/,
    ],
  ];
  for (const [what, leases, deployments, want] of cases) {
    const seen = controllerSighting(SUC_CONTROLLER, leases, deployments, held).standDown;
    if (want) assert.match(seen ?? '', want, what);
    else assert.equal(seen, undefined, what);
  }
});

test("a Job under the attempt's Job name that is not nuo's (SUC's, made before SUC stopped) is named, with how it goes", () => {
  const suc = {
    metadata: {
      name: 'apply-os-on-n1-with-h',
      namespace: 'system-upgrade',
      labels: { 'upgrade.cattle.io/controller': 'system-upgrade-controller' },
    },
    spec: { template: {}, ttlSecondsAfterFinished: 900 },
  };
  assert.match(
    foreignJob(suc) ?? '',
    /^Job system-upgrade\/apply-os-on-n1-with-h exists, made by system-upgrade-controller .*: nuo's starts once it is gone \(its ttlSecondsAfterFinished, 900 s, or delete it\)$/,
  );
  const p = plan(SUC, 'system-upgrade', 'os');
  const ours = buildJob({
    plan: { apiVersion: SUC, ...p.metadata, uid: 'u', spec: p.spec },
    node: { name: 'n1', bootId: 'b' },
    version: 'v1',
    hash: 'h',
  });
  assert.equal(foreignJob(ours), undefined, "nuo's own");
});

test("SUC's own Plans' conditions read as SUC writes them: its reasons, no message on a True Validated or LatestResolved", () => {
  const d = (type: string, status: 'True' | 'False', reason: string, message = 'm') => ({
    type,
    status,
    reason,
    message,
  });
  const table: Array<[ReturnType<typeof d>, ReturnType<typeof d>]> = [
    [d('Validated', 'True', 'Valid'), d('Validated', 'True', 'PlanIsValid', '')],
    [d('Validated', 'False', 'InvalidSpec'), d('Validated', 'False', 'Error')],
    [d('LatestResolved', 'True', 'Channel'), d('LatestResolved', 'True', 'Channel', '')],
    [d('LatestResolved', 'False', 'ResolveError'), d('LatestResolved', 'False', 'Error')],
    [d('Complete', 'False', 'Applying'), d('Complete', 'False', 'SyncJob')],
    [d('Complete', 'False', 'Waiting'), d('Complete', 'False', 'Waiting')],
    [d('Complete', 'True', 'Complete'), d('Complete', 'True', 'Complete')],
  ];
  for (const [ours, suc] of table) assert.deepEqual(asSuc(ours), suc, `${ours.type} ${ours.reason}`);
});
