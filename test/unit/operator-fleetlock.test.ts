/**
 * A pool whose nodes run a FleetLock client (Zincati): the need is a pre-reboot the handler recorded and no
 * steady-state since, the grant nuo's `fleetlock-granted`, the reboot a boot ID change, the client's
 * steady-state its report to the health gate.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotations as A, AgentProtocol, FleetLockKeys as K, Labels as L } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { fleetLockNeed, operatorKeys, speaking } from '../../src/operator/decide/agent-protocol.ts';
import { BootWitness } from '../../src/operator/decide/boot-witness.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import { foreignOperatorHold } from '../../src/operator/policies/pool-holds.ts';
import { patchFor } from '../../src/operator/write/node-writes.ts';
import { resolvePolicy } from '../../src/policy/resolve.ts';
import { ago, decideConfig, holderStep, NOW, node } from './operator-fixtures.ts';

const FL = AgentProtocol.fleetlock;
const fl = (o: Parameters<typeof node>[1] = {}) => speaking(viewNode(node('n', o)), FL);

test('the need: a pre-reboot with no steady-state after it, told by which keys stand, never by their times', () => {
  const table: Array<[string, Record<string, string>, boolean]> = [
    ['nothing asked', {}, false],
    ['pre-reboot asked', { [K.preReboot]: ago(60) }, true],
    ['steady-state after it', { [K.preReboot]: ago(60), [K.steadyState]: ago(30) }, false],
    [
      'steady-state after it, written by a leader whose clock was behind',
      { [K.preReboot]: ago(10), [K.steadyState]: ago(600) },
      false,
    ],
    ['a pre-reboot time that is not one (for people only)', { [K.preReboot]: 'soon' }, true],
    ['a steady-state alone', { [K.steadyState]: ago(30) }, false],
  ];
  for (const [what, annotations, want] of table) {
    assert.equal(fleetLockNeed(annotations), want, what);
    assert.equal(fl({ annotations }).rebootNeeded, want, what);
  }
});

test("a node read through FleetLock: nuo's agent's keys ignored, nuo's grant key for it", () => {
  const n = fl({
    annotations: {
      [A.rebootNeeded]: 'true',
      [A.rebootRequested]: NOW.toISOString(),
      [K.granted]: 'true',
      [A.grantedBootId]: 'boot-1',
    },
    bootId: 'boot-1',
  });
  assert.equal(n.protocol, FL);
  assert.equal(n.rebootNeeded, false);
  assert.equal(n.rebootRequested, undefined);
  assert.equal(n.grantShown, true);
  assert.equal(n.bootIdBefore, 'boot-1');
  assert.deepEqual(operatorKeys(FL), {
    rebootOk: K.granted,
    beforeReboot: L.beforeReboot,
    afterReboot: L.afterReboot,
    grantedBootId: A.grantedBootId,
  });
});

test('the grant writes fleetlock-granted and the boot it was given on; the end removes both', () => {
  const grant = patchFor(
    { type: 'grant', node: 'n', message: 'drained', grant: 'true' },
    fl(),
    decideConfig,
    NOW,
  );
  assert.equal(grant.annotations?.[K.granted], 'true');
  assert.equal(grant.annotations?.[A.grantedBootId], 'boot-1');
  assert.equal(grant.annotations?.[A.rebootOk], undefined);
  const end = patchFor({ type: 'end', node: 'n', reason: 'r', to: Phase.pending }, fl(), decideConfig, NOW);
  assert.equal(end.annotations?.[K.granted], null);
  assert.equal(end.annotations?.[A.grantedBootId], null);
});

test('a FleetLock slot holder steps by what its client asked: phase × keys → next action', () => {
  const granted = { [K.granted]: 'true', [A.grantedBootId]: 'boot-1', [K.preReboot]: ago(120) };
  const cases: Array<{
    what: string;
    phase: string;
    annotations: Record<string, string>;
    bootId?: string;
    want: string;
  }> = [
    {
      what: 'granted, the client not rebooted yet',
      phase: Phase.rebootGranted,
      annotations: granted,
      want: '',
    },
    {
      what: 'granted, back in a new boot: on to the gate, the grant kept',
      phase: Phase.rebootGranted,
      annotations: granted,
      bootId: 'boot-2',
      want: 'transition AfterReboot (grant kept)',
    },
    {
      what: 'granted, a steady-state on the granted boot as the kubelet last posted it: it may be the new boot, the kubelet not posted yet; the attempt waits',
      phase: Phase.rebootGranted,
      annotations: { ...granted, [K.steadyState]: ago(1) },
      want: 'explain',
    },
    {
      what: 'and past the reboot timeout measured from the grant, still no kubelet post: it may be booting behind a late kubelet; Failed, the slot kept (fail closed)',
      phase: Phase.rebootGranted,
      annotations: { ...granted, [K.steadyState]: ago(1), [A.stateSince]: ago(601) },
      want: 'transition Failed',
    },
    {
      what: 'Failed (never came back), released by a person: the lock withdrawn, the slot freed; the client reboots only after a fresh 200',
      phase: Phase.failed,
      annotations: {
        ...granted,
        [A.stateSince]: '2026-11-25T11:00:00Z',
        [A.release]: JSON.stringify({ failedSince: '2026-11-25T11:00:00Z', reason: 'machine replaced' }),
      },
      want: 'abort',
    },
    {
      what: 'after the boot, no steady-state yet: the gate waits for it',
      phase: Phase.afterReboot,
      annotations: granted,
      bootId: 'boot-2',
      want: 'explain',
    },
    {
      what: 'after the boot, steady-state asked: complete',
      phase: Phase.afterReboot,
      annotations: { ...granted, [K.steadyState]: ago(1) },
      bootId: 'boot-2',
      want: 'complete',
    },
  ];
  for (const c of cases) {
    const n = fl({
      annotations: { [A.state]: c.phase, [A.stateSince]: ago(5), ...c.annotations },
      unschedulable: true,
      bootId: c.bootId ?? 'boot-1',
      readySince: ago(3600),
    });
    const got = holderStep(n, decideConfig);
    assert.equal(got, c.want, c.what);
  }
});

test("a Failed FleetLock node past failedSlotTTL is released (its client reboots only after a fresh 200); FLUO's is not (its agent reboots on the grant it still sees)", () => {
  const failed = (protocol: typeof FL | typeof AgentProtocol.flatcar) =>
    speaking(
      viewNode(
        node('n', {
          annotations: {
            [A.state]: Phase.failed,
            [A.stateSince]: ago(7200),
            [K.granted]: 'true',
            [K.preReboot]: ago(7300),
          },
          unschedulable: true,
          bootId: 'boot-1',
        }),
      ),
      protocol,
    );
  const ttl = { ...decideConfig, failedSlotTtlMs: 3600_000 };
  assert.equal(holderStep(failed(FL), ttl), 'abort', 'FleetLock: released');
  assert.equal(holderStep(failed(AgentProtocol.flatcar), ttl), 'explain', 'FLUO: refused, and said so');
});

test('a FleetLock pool has no other operator to stand down from', () => {
  const r = resolvePolicy({
    metadata: { name: 'coreos', generation: 1 },
    spec: { agentProtocol: FL },
  });
  assert.ok(r.ok);
  assert.equal(
    foreignOperatorHold(r.policy, () => undefined),
    undefined,
  );
});

test('a withdrawal after a grant ends the attempt once the kubelet posted the granted boot again, Ready, after it was seen; a new boot ID is a reboot, on to the health gate', () => {
  const granted = {
    [A.state]: Phase.rebootGranted,
    [A.stateSince]: ago(5),
    [K.granted]: 'true',
    [A.grantedBootId]: 'boot-1',
    [K.preReboot]: ago(120),
  };
  const withdrawn = (heartbeat: string, bootId = 'boot-1') => {
    const v = fl({ annotations: { ...granted, [K.steadyState]: ago(1) }, unschedulable: true, bootId });
    return { ...v, heartbeat };
  };
  const witness = new BootWitness();
  const first = witness.view(withdrawn('h1'));
  assert.equal(first.bootConfirmed, undefined, 'first sight of the withdrawal: nothing confirmed');
  assert.equal(holderStep(first, decideConfig), 'explain', 'the attempt waits for the kubelet');
  assert.equal(witness.view(withdrawn('h1')).bootConfirmed, undefined, 'no new post: still waiting');
  const posted = witness.view(withdrawn('h2'));
  assert.equal(posted.bootConfirmed, true, 'the kubelet posted the same boot again: not rebooted');
  assert.equal(holderStep(posted, decideConfig), 'end');
  const rebooted = new BootWitness();
  rebooted.view(withdrawn('h1'));
  const back = rebooted.view(withdrawn('h2', 'boot-2'));
  assert.equal(back.bootConfirmed, undefined, 'a new boot is no confirmation of the old one');
  assert.equal(holderStep(back, decideConfig), 'transition AfterReboot (grant kept)');
  const down = new BootWitness();
  down.view(withdrawn('h1'));
  const notReady = down.view({ ...withdrawn('h2'), ready: false });
  assert.equal(
    notReady.bootConfirmed,
    undefined,
    'a NotReady post on the granted boot is a machine going down',
  );
  assert.equal(holderStep(notReady, decideConfig), 'explain');
  const renewed = new BootWitness();
  renewed.view(withdrawn('h1'));
  const asking = fl({ annotations: granted, unschedulable: true });
  assert.equal(renewed.view(asking).bootConfirmed, undefined, 'the need stands again: forgotten');
  assert.equal(renewed.view(withdrawn('h2')).bootConfirmed, undefined, 'a withdrawal seen afresh');
});

test("the withdrawal is read in the agent's protocol, the confirmation set on the view by nuo's keys that the pass speaks later", () => {
  const annotations = {
    [A.state]: Phase.rebootGranted,
    [A.stateSince]: ago(5),
    [K.granted]: 'true',
    [A.grantedBootId]: 'boot-1',
    [K.preReboot]: ago(120),
    [K.steadyState]: ago(1),
  };
  const byNuoKeys = (heartbeat: string) => ({
    ...viewNode(node('n', { annotations, unschedulable: true, bootId: 'boot-1' })),
    heartbeat,
  });
  const witness = new BootWitness();
  witness.view(byNuoKeys('h1'), speaking(byNuoKeys('h1'), FL));
  const posted = witness.view(byNuoKeys('h2'), speaking(byNuoKeys('h2'), FL));
  assert.equal(posted.bootConfirmed, true, 'the kubelet posted the granted boot again');
  assert.equal(posted.protocol, undefined, "still the view by nuo's keys");
  assert.equal(holderStep(speaking(posted, FL), decideConfig), 'end', 'spoken, it ends the attempt');
  const blind = new BootWitness();
  blind.view(byNuoKeys('h1'));
  assert.equal(
    blind.view(byNuoKeys('h2')).bootConfirmed,
    undefined,
    "nuo's keys alone never show a FleetLock client's withdrawal",
  );
});
