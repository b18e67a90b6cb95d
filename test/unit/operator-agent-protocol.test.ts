/**
 * A pool whose agents speak CLUO's or FLUO's protocol: its nodes read through that protocol, the writes
 * that grant and ask for hooks in its keys, each phase's step where it differs from nuo's agent, the
 * grants nuo keeps or removes, and the pool nuo stands down from while that project's operator runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Deployment, V1Node } from '@kubernetes/client-node';
import {
  Annotations as A,
  AgentProtocol,
  type CoreosProtocol,
  Labels as L,
  PROTOCOL_OPERATOR,
  protocolAgentKeys,
  protocolKeys,
  SCALE_DOWN_PROTECTION,
  ScaleDownProtection,
} from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { UpdatePolicySpec } from '../../src/api/update-policy.ts';
import { operatorKeys, speaking } from '../../src/operator/decide/agent-protocol.ts';
import { decide } from '../../src/operator/decide/decide.ts';
import type { DecideConfig } from '../../src/operator/decide/decide-input.ts';
import { revokeForeignGrants } from '../../src/operator/decide/foreign-grants.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import { stepHolder } from '../../src/operator/decide/phase-steps.ts';
import { Decider } from '../../src/operator/decider.ts';
import type { PolicyEntry } from '../../src/operator/policies/policies.ts';
import { foreignOperatorHold } from '../../src/operator/policies/pool-holds.ts';
import { planPools, protocolOf } from '../../src/operator/policies/pool-plan.ts';
import {
  annotatedLock,
  type FoundLock,
  LEADER_ANNOTATION,
  LockKind,
  LockObserver,
  leaseLock,
  lockHeld,
} from '../../src/operator/protocols/foreign-locks.ts';
import { sightingOf } from '../../src/operator/protocols/protocol-operators.ts';
import { parseLedger, withChanges } from '../../src/operator/read/ledger.ts';
import { patchFor, type WriteAction } from '../../src/operator/write/node-writes.ts';
import { resolvePolicy } from '../../src/policy/resolve.ts';
import { ago, decideConfig, holderStep, NOW, node, ofType } from './operator-fixtures.ts';

const FLUO = AgentProtocol.flatcar;
const F = protocolKeys(FLUO);
const C = protocolKeys(AgentProtocol.containerLinux);
const fluoConfig: DecideConfig = decideConfig;
const fluo = (o: Parameters<typeof node>[1] = {}) => speaking(viewNode(node('n', o)), FLUO);

test("the two protocols are one set of keys under FLUO's and CLUO's prefixes", () => {
  assert.equal(F.rebootOk, 'flatcar-linux-update.v1.flatcar-linux.net/reboot-ok');
  assert.equal(C.rebootOk, 'container-linux-update.v1.coreos.com/reboot-ok');
  assert.deepEqual(
    Object.values(F).map((k) => k.replace('flatcar-linux-update.v1.flatcar-linux.net/', '')),
    Object.values(C).map((k) => k.replace('container-linux-update.v1.coreos.com/', '')),
  );
  assert.deepEqual(protocolAgentKeys(FLUO).labels, [F.rebootNeeded, F.id, F.group, F.version]);
  assert.deepEqual(operatorKeys(AgentProtocol.nuo), {
    rebootOk: A.rebootOk,
    beforeReboot: L.beforeReboot,
    afterReboot: L.afterReboot,
  });
  assert.equal(PROTOCOL_OPERATOR[FLUO].lock, 'flatcar-linux-update-operator-lock');
});

test('a node read through the protocol: annotations in → what decide() reads', () => {
  const table: Array<[string, Record<string, string>, Partial<ReturnType<typeof fluo>>]> = [
    [
      'the agent at its start: nothing needed',
      { [F.rebootNeeded]: 'false', [F.rebootInProgress]: 'false' },
      {
        rebootNeeded: false,
        rebootInProgress: false,
        grantShown: false,
      },
    ],
    [
      'its update engine staged an update: needed, why from status and version',
      {
        [F.rebootNeeded]: 'true',
        [F.status]: 'UPDATE_STATUS_UPDATED_NEED_REBOOT',
        [F.newVersion]: '4081.2.0',
      },
      { rebootNeeded: true, rebootNeededReason: 'UPDATE_STATUS_UPDATED_NEED_REBOOT, new version 4081.2.0' },
    ],
    ["nuo's own need key means nothing here", { [A.rebootNeeded]: 'true' }, { rebootNeeded: false }],
    [
      'a reboot requested through nuo is not read: this agent reboots for its own need only',
      { [A.rebootRequested]: ago(10) },
      { rebootRequested: undefined },
    ],
    [
      "the protocol's grant and mark",
      { [F.rebootOk]: 'true', [F.rebootInProgress]: 'true' },
      {
        grantShown: true,
        rebootInProgress: true,
      },
    ],
    ['"false" is no grant', { [F.rebootOk]: 'false' }, { grantShown: false }],
    [
      "nuo's signed grant key is not this protocol's grant",
      { [A.rebootOk]: 'v1.x.y' },
      { grantShown: false },
    ],
    ["the boot of the grant is nuo's record", { [A.grantedBootId]: 'boot-0' }, { bootIdBefore: 'boot-0' }],
    ["the agent's own boot-id key is not read", { [A.bootIdBefore]: 'boot-0' }, { bootIdBefore: undefined }],
    ["the protocol's pause pauses", { [F.rebootPaused]: 'true' }, { paused: true }],
    ["nuo's pause still pauses", { [A.paused]: 'true' }, { paused: true }],
    ['malformed nuo agent keys are no problem here', { [A.rebootInProgress]: 'maybe' }, { problems: [] }],
  ];
  for (const [what, annotations, want] of table) {
    const v = fluo({ annotations });
    assert.equal(v.protocol, FLUO, what);
    for (const [k, value] of Object.entries(want))
      assert.deepEqual(v[k as keyof typeof v], value, `${what}: ${k}`);
  }
  const plain = viewNode(node('n', { annotations: { [F.rebootNeeded]: 'true' } }));
  assert.equal(speaking(plain, AgentProtocol.nuo), plain, "nuo's protocol reads nuo's keys, unchanged");
});

test("each write in the protocol's keys: action → patch", () => {
  const hooks = { ...fluoConfig, beforeRebootAnnotations: ['hook/b'], afterRebootAnnotations: ['hook/a'] };
  const T = NOW.toISOString();
  const phase = (to: string, reason: string) => ({
    [A.state]: to,
    [A.stateReason]: reason,
    [A.stateSince]: T,
  });
  const noHookLabels = { [F.beforeReboot]: null, [F.afterReboot]: null };
  const table: Array<[string, WriteAction, typeof hooks | DecideConfig, ReturnType<typeof patchFor>]> = [
    [
      "admitted with hooks: the protocol's before-reboot label, the autoscalers' protection as for nuo's agent",
      { type: 'admit', node: 'n', reason: 'r', for: 'Reboot' },
      hooks,
      {
        annotations: {
          ...phase(Phase.beforeReboot, 'waiting for before-reboot hooks: hook/b'),
          'hook/b': null,
          [ScaleDownProtection.clusterAutoscaler]: 'true',
          [ScaleDownProtection.karpenter]: 'true',
          [A.scaleDownProtection]: SCALE_DOWN_PROTECTION.join(','),
        },
        labels: { [F.beforeReboot]: 'true' },
      },
    ],
    [
      'the grant: reboot-ok "true" and the boot it was given on',
      { type: 'grant', node: 'n', message: 'drained', grant: 'true' },
      fluoConfig,
      {
        annotations: {
          ...phase(Phase.rebootGranted, 'drained; reboot granted'),
          [F.rebootOk]: 'true',
          [A.grantedBootId]: 'boot-1',
        },
      },
    ],
    [
      "back after the boot, with hooks: the protocol's after-reboot label, the grant kept",
      { type: 'transition', node: 'n', to: Phase.afterReboot, reason: 'rebooted' },
      hooks,
      {
        annotations: { ...phase(Phase.afterReboot, 'rebooted'), 'hook/a': null },
        labels: { [F.afterReboot]: 'true' },
      },
    ],
    [
      'completed: the grant and its boot cleared, hook labels removed',
      { type: 'complete', node: 'n', reason: 'healthy' },
      hooks,
      {
        annotations: {
          ...phase(Phase.idle, 'healthy'),
          [F.rebootOk]: null,
          [A.grantedBootId]: null,
          [A.failures]: null,
          [A.rebootRequested]: null,
          [A.ineffectiveReboots]: null,
          'hook/b': null,
          'hook/a': null,
        },
        labels: noHookLabels,
      },
    ],
    [
      'a grant nuo did not give, removed',
      { type: 'revoke', node: 'n', reason: 'r' },
      fluoConfig,
      { annotations: { [F.rebootOk]: null, [A.grantedBootId]: null } },
    ],
    [
      'an attempt ended: the grant withdrawn in the same write',
      { type: 'end', node: 'n', reason: 'r', to: Phase.pending },
      fluoConfig,
      { annotations: { ...phase(Phase.pending, 'r'), [F.rebootOk]: null, [A.grantedBootId]: null } },
    ],
  ];
  for (const [what, action, config, want] of table)
    assert.deepEqual(patchFor(action, fluo(), config, NOW), want, what);
});

test('a slot holder of the protocol steps by what its agent does: phase × keys → next action', () => {
  const granted = { [F.rebootOk]: 'true', [A.grantedBootId]: 'boot-1', [F.rebootNeeded]: 'true' };
  const cases: Array<{
    what: string;
    phase: string;
    annotations: Record<string, string>;
    bootId?: string;
    /** The kubelet posted the granted boot since the withdrawal was seen (boot-witness.ts). */
    confirmed?: true;
    want: string;
  }> = [
    {
      what: 'granted, the agent not started yet',
      phase: Phase.rebootGranted,
      annotations: granted,
      want: '',
    },
    {
      what: 'granted, the agent marked its reboot',
      phase: Phase.rebootGranted,
      annotations: { ...granted, [F.rebootInProgress]: 'true' },
      want: 'transition Rebooting',
    },
    {
      what: 'granted, back in a new boot before nuo saw the mark: on to the gate, the grant kept',
      phase: Phase.rebootGranted,
      annotations: { ...granted, [F.rebootNeeded]: 'false', [F.rebootInProgress]: 'false' },
      bootId: 'boot-2',
      want: 'transition AfterReboot (grant kept)',
    },
    {
      what: 'granted, the agent withdrew its need, the kubelet not heard from since: the attempt waits (it may be the new boot)',
      phase: Phase.rebootGranted,
      annotations: { ...granted, [F.rebootNeeded]: 'false', [F.rebootInProgress]: 'false' },
      want: 'explain',
    },
    {
      what: 'granted, the agent withdrew its need, the kubelet not heard from within the reboot timeout: Failed, the slot kept (it may be booting behind a late kubelet)',
      phase: Phase.rebootGranted,
      annotations: {
        ...granted,
        [F.rebootNeeded]: 'false',
        [F.rebootInProgress]: 'false',
        [A.stateSince]: ago(601),
      },
      want: 'transition Failed',
    },
    {
      what: 'Failed so, then the kubelet posts the granted boot, Ready: the agent had only restarted; the attempt ends',
      phase: Phase.failed,
      annotations: { ...granted, [F.rebootNeeded]: 'false', [F.rebootInProgress]: 'false' },
      confirmed: true,
      want: 'end',
    },
    {
      what: 'Failed so, the kubelet not heard from yet: it stays Failed, its slot kept',
      phase: Phase.failed,
      annotations: { ...granted, [F.rebootNeeded]: 'false', [F.rebootInProgress]: 'false' },
      want: '',
    },
    {
      what: 'Failed so, then back in a new boot: on to the gate',
      phase: Phase.failed,
      annotations: { ...granted, [F.rebootNeeded]: 'false', [F.rebootInProgress]: 'false' },
      bootId: 'boot-2',
      want: 'transition AfterReboot (grant kept)',
    },
    {
      what: 'granted, the agent restarted and withdrew its need, the kubelet posting the granted boot since: the attempt ends',
      phase: Phase.rebootGranted,
      annotations: { ...granted, [F.rebootNeeded]: 'false', [F.rebootInProgress]: 'false' },
      confirmed: true,
      want: 'end',
    },
    {
      what: 'rebooting, the agent restarted before the reboot, confirmed by the kubelet: the attempt ends',
      phase: Phase.rebooting,
      annotations: { ...granted, [F.rebootNeeded]: 'false', [F.rebootInProgress]: 'false' },
      confirmed: true,
      want: 'end',
    },
    {
      what: 'rebooting, new boot',
      phase: Phase.rebooting,
      annotations: { ...granted, [F.rebootInProgress]: 'true' },
      bootId: 'boot-2',
      want: 'transition AfterReboot (grant kept)',
    },
    {
      what: 'after the boot, the agent not started yet: the gate waits for its report',
      phase: Phase.afterReboot,
      annotations: { ...granted, [F.rebootInProgress]: 'true' },
      bootId: 'boot-2',
      want: 'explain',
    },
    {
      what: 'after the boot, the agent reported: complete',
      phase: Phase.afterReboot,
      annotations: { ...granted, [F.rebootNeeded]: 'false', [F.rebootInProgress]: 'false' },
      bootId: 'boot-2',
      want: 'complete',
    },
  ];
  for (const c of cases) {
    const n = fluo({
      annotations: { [A.state]: c.phase, [A.stateSince]: ago(5), ...c.annotations },
      unschedulable: true,
      bootId: c.bootId ?? 'boot-1',
      readySince: ago(3600),
    });
    const got = holderStep(c.confirmed ? { ...n, bootConfirmed: true } : n, fluoConfig);
    assert.equal(got, c.want, c.what);
  }
});

test('a reboot after which the agent runs another version than it staged counts towards a loop', () => {
  const back = (version: string | undefined) =>
    stepHolder(
      fluo({
        annotations: {
          [A.state]: Phase.afterReboot,
          [A.stateSince]: ago(5),
          [F.rebootOk]: 'true',
          [A.grantedBootId]: 'boot-1',
          [F.rebootNeeded]: 'false',
          [F.rebootInProgress]: 'false',
          [F.newVersion]: '4081.2.1',
        },
        labels: version ? { [F.version]: version } : {},
        unschedulable: true,
        bootId: 'boot-2',
        readySince: ago(3600),
      }),
      {
        config: fluoConfig,
        now: NOW,
        draining: new Set(),
        health: new Map([['n', { daemonSetPodsReady: true, detail: 'ready' }]]),
        wake: () => {},
        slotOf: () => undefined,
      },
    );
  assert.deepEqual(back('4081.2.1'), [{ type: 'complete', node: 'n', reason: 'rebooted and healthy' }]);
  assert.deepEqual(back('4081.2.0'), [
    { type: 'complete', node: 'n', reason: 'rebooted and healthy', needSurvived: true },
  ]);
  assert.deepEqual(
    back(undefined),
    [{ type: 'complete', node: 'n', reason: 'rebooted and healthy' }],
    'unknown: taken',
  );
});

test("the protocol's grants: kept through the health gate, taken as nuo's in RebootGranted, removed elsewhere", () => {
  const at = (phase: string | undefined) =>
    fluo({ annotations: { ...(phase ? { [A.state]: phase } : {}), [F.rebootOk]: 'true' } });
  const revoked = (phase: string | undefined) =>
    revokeForeignGrants([at(phase)], () => false).map((a) => a.type === 'revoke' && a.reason);
  assert.deepEqual(revoked(Phase.rebootGranted), [], 'no signature to check: taken as nuo’s');
  assert.deepEqual(revoked(Phase.afterReboot), [], 'the agent waits for it to go at the end of the attempt');
  assert.deepEqual(revoked(Phase.failed), []);
  assert.deepEqual(revoked(Phase.idle), [`removed ${F.rebootOk}="true": nuo gave no grant (phase Idle)`]);
  assert.deepEqual(revoked(undefined), [`removed ${F.rebootOk}="true": nuo gave no grant (phase none)`]);
  const nuoNode = viewNode(
    node('n', { annotations: { [A.state]: Phase.afterReboot, [A.rebootOk]: 'v1.x.y' } }),
  );
  assert.equal(revokeForeignGrants([nuoNode]).length, 1, "nuo's own grant still goes at the gate");
});

const policy = (spec: UpdatePolicySpec, name = 'flatcar'): PolicyEntry => {
  const current = resolvePolicy({ metadata: { name, generation: 1 }, spec });
  return { name, uid: name, generation: 1, current, ...(current.ok ? { lastValid: current.policy } : {}) };
};

test("a pool of the protocol stands down while that project's own operator runs, or before nuo looked", () => {
  const p = policy({ agentProtocol: FLUO });
  assert.ok(p.current.ok);
  if (!p.current.ok) return;
  assert.equal(p.current.policy.agentProtocol, FLUO);
  const resolvedNuo = policy({});
  assert.ok(
    resolvedNuo.current.ok && resolvedNuo.current.policy.agentProtocol === AgentProtocol.nuo,
    'nuo by default',
  );
  const table: Array<[string, ReturnType<typeof sightingOf> | undefined, string | undefined]> = [
    ['not looked yet', undefined, 'ForeignOperator'],
    ['not running', {}, undefined],
    ['running', { standDown: 'the x update-operator runs' }, 'ForeignOperator'],
  ];
  for (const [what, sighting, code] of table)
    assert.equal(foreignOperatorHold(p.current.policy, () => sighting)?.code, code, what);
  if (resolvedNuo.current.ok)
    assert.equal(
      foreignOperatorHold(resolvedNuo.current.policy, () => undefined),
      undefined,
      "nuo's agents: never",
    );
  const plan = planPools({
    state: { known: true, crdMissing: false, policies: [p] },
    paused: false,
    nodes: [viewNode(node('f1', { annotations: { [F.rebootNeeded]: 'true' } }))],
    ledger: { slots: {} },
    now: NOW,
    sighting: () => ({ standDown: 'the x update-operator runs' }),
  });
  const pool = plan.pools[0];
  assert.equal(
    pool?.hold?.reason,
    'not managed: the x update-operator runs; nuo touches no node of this pool until it is gone',
  );
  assert.equal(pool?.nodes[0]?.protocol, FLUO);
  assert.equal(pool?.nodes[0]?.rebootNeeded, true, 'its nodes read through the protocol');
});

test("what tells the protocol's own operator runs: its lock (Lease, ConfigMap or Endpoints) held and renewed, or its Deployment wanting pods", () => {
  const lease = (name: string, holder: string | undefined, duration = 90): FoundLock =>
    leaseLock({
      metadata: { name, namespace: 'reboot-coordinator', uid: `uid-${name}`, resourceVersion: '1' },
      spec: {
        ...(holder ? { holderIdentity: holder } : {}),
        leaseDurationSeconds: duration,
        renewTime: new Date(0) as never,
      },
    });
  /** client-go's ConfigMapLock and EndpointsLock: the record as JSON in one annotation. */
  const annotated = (kind: LockKind, name: string, record: string | undefined): FoundLock =>
    annotatedLock(kind, {
      metadata: {
        name,
        namespace: 'reboot-coordinator',
        uid: `uid-${kind}-${name}`,
        resourceVersion: '1',
        ...(record === undefined ? {} : { annotations: { [LEADER_ANNOTATION]: record } }),
      },
    });
  const record = (holder: string) =>
    JSON.stringify({
      holderIdentity: holder,
      leaseDurationSeconds: 90,
      acquireTime: '2018-06-13T00:00:00Z',
      renewTime: '2018-06-13T00:00:00Z',
      leaderTransitions: 3,
    });
  const deployment = (name: string, replicas?: number): V1Deployment => ({
    metadata: { name, namespace: 'reboot-coordinator' },
    spec: { ...(replicas === undefined ? {} : { replicas }), selector: {}, template: {} },
  });
  const fluoLock = PROTOCOL_OPERATOR[FLUO].lock;
  const cluoLock = PROTOCOL_OPERATOR[AgentProtocol.containerLinux].lock;
  /** Judged at a first sight, as a fresh observer does. */
  const firstSight = (l: FoundLock) => new LockObserver(() => 0).observe([l])(l);
  const table: Array<[string, CoreosProtocol, FoundLock[], V1Deployment[], string | undefined]> = [
    ['nothing', FLUO, [], [], undefined],
    [
      'its Lease held, seen for the first time',
      FLUO,
      [lease(fluoLock, 'host-a')],
      [],
      `FLUO's update-operator runs: its Lease reboot-coordinator/${fluoLock} is held by host-a`,
    ],
    ['its Lease released (no holder)', FLUO, [lease(fluoLock, undefined)], [], undefined],
    ["another project's Lease", FLUO, [lease('other-lock', 'host-a')], [], undefined],
    [
      "CLUO's ConfigMap lock (its operator's only kind since 0.4), under any Deployment name",
      AgentProtocol.containerLinux,
      [annotated(LockKind.configMap, cluoLock, record('cluo-7d9f'))],
      [],
      `CLUO's update-operator runs: its ConfigMap reboot-coordinator/${cluoLock} is held by cluo-7d9f`,
    ],
    [
      "CLUO's Endpoints lock (its releases before 0.4)",
      AgentProtocol.containerLinux,
      [annotated(LockKind.endpoints, cluoLock, record('cluo-old'))],
      [],
      `CLUO's update-operator runs: its Endpoints reboot-coordinator/${cluoLock} is held by cluo-old`,
    ],
    [
      'a ConfigMap of its name without the record: nobody holds it',
      AgentProtocol.containerLinux,
      [annotated(LockKind.configMap, cluoLock, undefined)],
      [],
      undefined,
    ],
    [
      'a released record (client-go writes an empty holder)',
      AgentProtocol.containerLinux,
      [annotated(LockKind.configMap, cluoLock, record(''))],
      [],
      undefined,
    ],
    [
      'a record nuo cannot read: held (fail closed), and said so',
      AgentProtocol.containerLinux,
      [annotated(LockKind.configMap, cluoLock, '{"holderIdentity": 7}')],
      [],
      `CLUO's update-operator runs: its ConfigMap reboot-coordinator/${cluoLock} is held by a holder nuo cannot read (its ${LEADER_ANNOTATION} annotation is not client-go's record)`,
    ],
    [
      "the other protocol's lock",
      FLUO,
      [annotated(LockKind.configMap, cluoLock, record('x'))],
      [],
      undefined,
    ],
    [
      'its Deployment, one replica by default',
      FLUO,
      [],
      [deployment('flatcar-linux-update-operator')],
      "FLUO's update-operator is deployed: Deployment reboot-coordinator/flatcar-linux-update-operator wants 1 replica(s)",
    ],
    ['its Deployment scaled to 0', FLUO, [], [deployment('flatcar-linux-update-operator', 0)], undefined],
  ];
  for (const [what, protocol, locks, deployments, want] of table)
    assert.equal(sightingOf(protocol, locks, deployments, firstSight).standDown, want, what);
});

test("a foreign lock is judged by when this process saw its record change, on its own clock, never by its renewTime (client-go's observedTime)", () => {
  const clock = { at: 0 };
  const observer = new LockObserver(() => clock.at);
  const lease = (renewTime: string, resourceVersion: string, holder = 'fluo-0'): FoundLock =>
    leaseLock({
      metadata: { name: 'lock', namespace: 'reboot-coordinator', uid: 'u1', resourceVersion },
      spec: { holderIdentity: holder, leaseDurationSeconds: 90, renewTime: new Date(renewTime) as never },
    });
  const configMap = (renewTime: string, resourceVersion: string): FoundLock =>
    annotatedLock(LockKind.configMap, {
      metadata: {
        name: 'lock',
        namespace: 'reboot-coordinator',
        uid: 'u2',
        resourceVersion,
        annotations: {
          [LEADER_ANNOTATION]: JSON.stringify({
            holderIdentity: 'cluo-0',
            leaseDurationSeconds: 90,
            renewTime,
          }),
        },
      },
    });
  // Each step: this process's monotonic time (s), the locks as listed, whether the first is held then.
  const steps: Array<[string, number, FoundLock | undefined, boolean]> = [
    // renewTime 10 minutes behind this process's wall clock (its clock ahead): nothing in it is compared.
    ['first sight: held for a leaseDuration', 0, lease('2026-01-01T00:00:00Z', '10'), true],
    ['unchanged, 89 s later: still held', 89, lease('2026-01-01T00:00:00Z', '10'), true],
    ['renewed (a new renewTime): held again from now', 89.5, lease('2026-01-01T00:01:00Z', '11'), true],
    [
      'unchanged since then, 90 s later: not held (its holder stopped)',
      179.5,
      lease('2026-01-01T00:01:00Z', '11'),
      false,
    ],
    ['any write to it counts (a new resourceVersion)', 180, lease('2026-01-01T00:01:00Z', '12'), true],
    ['a new holder counts', 300, lease('2026-01-01T00:01:00Z', '12', 'fluo-1'), true],
    ['released: not held whatever its times', 301, lease('2026-01-01T00:01:00Z', '13', ''), false],
    ['a ConfigMap lock, first sight: held', 400, configMap('2018-01-01T00:00:00Z', '1'), true],
    [
      'the ConfigMap unchanged for its duration: not held',
      490,
      configMap('2018-01-01T00:00:00Z', '1'),
      false,
    ],
    ['the ConfigMap renewed: held from now', 491, configMap('2018-01-01T00:00:30Z', '2'), true],
  ];
  for (const [what, at, l, want] of steps) {
    clock.at = at * 1000;
    const held = observer.observe(l ? [l] : []);
    assert.equal(l ? held(l) : false, want, what);
  }
  // A lock gone from the list is forgotten: seen again, it is a first sight.
  clock.at = 1_000_000;
  observer.observe([]);
  const back = lease('2026-01-01T00:01:00Z', '13');
  assert.equal(observer.observe([back])(back), true, 'a Lease seen again after it was gone');
  assert.equal(
    lockHeld(back, { fingerprint: '', at: 0 }, 90_000),
    false,
    'lockHeld: at its duration, no longer',
  );
  assert.equal(lockHeld(back, { fingerprint: '', at: 0 }, 89_999), true, 'lockHeld: within it');
});

test("decide() on a pool of the protocol: the agent's need admits, within the budget", () => {
  const nodes = ['a', 'b'].map((name) =>
    speaking(viewNode(node(name, { annotations: { [F.rebootNeeded]: 'true' } })), FLUO),
  );
  const snapshot = {
    nodes,
    ledger: { slots: {} },
    draining: new Set<string>(),
    admitting: new Set<string>(),
    health: new Map(),
  };
  const { actions } = decide(snapshot, fluoConfig, NOW);
  assert.deepEqual(ofType(actions, 'admit'), ['a']);
  assert.deepEqual(ofType(actions, 'pending'), ['b']);
});

test('an attempt ends in the protocol it began in: its slot records it, whatever the policy says meanwhile', () => {
  const admitted = withChanges(
    { slots: {} },
    [
      { type: 'admit', node: 'f', reason: 'r', for: 'Reboot', protocol: FLUO },
      { type: 'admit', node: 'n', reason: 'r', for: 'Reboot' },
    ],
    'T',
    'pool',
  );
  assert.deepEqual(admitted.slots, {
    f: { since: 'T', attempt: 1, pool: 'pool', protocol: FLUO, reason: 'Reboot' },
    n: { since: 'T', attempt: 2, pool: 'pool', reason: 'Reboot' },
  });
  const claimed = withChanges({ slots: {} }, [{ type: 'claim', node: 'f', since: 'S', protocol: FLUO }], 'T');
  assert.deepEqual(claimed.slots.f, { since: 'S', protocol: FLUO });
  assert.equal(protocolOf(admitted, 'f', AgentProtocol.nuo), FLUO, "the slot's, not the pool's now");
  assert.equal(protocolOf(admitted, 'n', FLUO), AgentProtocol.nuo, "a slot without one: nuo's");
  assert.equal(protocolOf(admitted, 'idle', FLUO), FLUO, "outside an attempt: the pool's");
  const doc = (protocol: unknown) => ({
    data: { 'ledger.json': JSON.stringify({ slots: { f: { since: 'T', protocol } } }) },
  });
  assert.equal(parseLedger(doc(FLUO)).slots.f?.protocol, FLUO);
  assert.throws(() => parseLedger(doc('nuo')), /a "protocol" that is not one of/);
  assert.throws(() => parseLedger(doc(7)), /a "protocol" that is not one of/);

  const policyNow = policy({ agentProtocol: AgentProtocol.nuo }, 'fluo');
  const plan = planPools({
    state: { known: true, crdMissing: false, policies: [policyNow] },
    paused: false,
    nodes: [viewNode(node('f', { labels: {} })), viewNode(node('g'))],
    ledger: { slots: { f: { since: 'T', pool: 'fluo', protocol: FLUO } } },
    now: NOW,
  });
  const byName = new Map(plan.pools[0]?.nodes.map((n) => [n.name, n.protocol]));
  assert.equal(byName.get('f'), FLUO, 'the holder keeps its protocol after the policy changed');
  assert.equal(byName.get('g'), undefined, "the rest follow the policy: nuo's");
  const orphaned = planPools({
    state: { known: true, crdMissing: false, policies: [] },
    paused: false,
    nodes: [viewNode(node('f'))],
    ledger: { slots: { f: { since: 'T', pool: 'gone', protocol: FLUO } } },
    now: NOW,
  });
  assert.equal(
    orphaned.pools[0]?.nodes[0]?.protocol,
    FLUO,
    'its policy deleted, it still ends in its protocol',
  );
});

test('an admission of a node of the protocol names it, for its slot', () => {
  const n = speaking(viewNode(node('a', { annotations: { [F.rebootNeeded]: 'true' } })), FLUO);
  const { actions } = decide(
    { nodes: [n], ledger: { slots: {} }, draining: new Set(), admitting: new Set(), health: new Map() },
    decideConfig,
    NOW,
  );
  assert.deepEqual(
    actions.filter((a) => a.type === 'admit'),
    [{ type: 'admit', node: 'a', reason: 'reboot needed', for: 'Reboot', protocol: FLUO }],
  );
});

test("the decider reads a pool's nodes through its protocol, and does nothing to a pool it stands down from", () => {
  let sighting: ReturnType<typeof sightingOf> = { standDown: 'the x update-operator runs' };
  const nodes = [node('f1', { labels: { pool: 'fluo' }, annotations: { [F.rebootNeeded]: 'true' } })];
  const decider = new Decider({
    paused: false,
    policies: () => ({
      known: true,
      crdMissing: false,
      policies: [policy({ agentProtocol: FLUO, nodeSelector: { matchLabels: { pool: 'fluo' } } })],
    }),
    blockers: () => undefined,
    sighting: () => sighting,
    nodeHolds: () => new Map(),
    nodes: { list: () => nodes },
    draining: () => new Set(),
    ownGrant: () => true,
    plans: () => [],
    jobs: () => new Map(),
    planDrain: () => undefined,
  });
  const pass = () => decider.decide(decider.nodes(NOW), { slots: {} }, new Map(), NOW);
  assert.deepEqual(pass().actions, [], 'stood down: not even Pending is written');
  assert.equal(decider.standsDown('f1'), true);
  sighting = {};
  assert.deepEqual(
    pass().actions.map((a) => `${a.type} ${a.node}`),
    ['admit f1'],
  );
  assert.equal(decider.standsDown('f1'), false);
  const seen = decider.view(nodes[0] as V1Node);
  assert.equal(seen.protocol, FLUO, 'read through its pool’s protocol for the writes that follow');
  assert.equal(seen.rebootNeeded, true);
});
