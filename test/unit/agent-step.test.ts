import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Need } from '../../src/agent/os.ts';
import { agentStep, REBOOTED_BEFORE_GRANT } from '../../src/agent/step.ts';
import { GrantCheck, type GrantVerdict } from '../../src/api/grant.ts';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';

const needed = { need: Need.needed, reason: 'kernel updated' } as const;
const notNeeded = { need: Need.notNeeded, reason: 'up to date' } as const;
const unknown = { need: Need.unknown, reason: 'update_engine not on the bus' } as const;
/** A node with a grant on it; what the agent's verifier made of it is the step's `grant` input. */
const grant = {
  [Annotations.rebootOk]: 'v1.claim.signature',
  [Annotations.state]: Phase.rebootGranted,
  [Annotations.stateSince]: '2026-11-21T11:00:00Z',
};
const valid: GrantVerdict = { check: GrantCheck.valid };
const otherBoot: GrantVerdict = {
  check: GrantCheck.otherBoot,
  why: 'it was given in boot boot-1, not boot-2',
};
const forged: GrantVerdict = { check: GrantCheck.forged, why: 'its signature is not the operator key' };
const step = (
  annotations: Record<string, string>,
  detection = notNeeded as typeof needed | typeof notNeeded | typeof unknown,
  rebootRequested = false,
  verdict: GrantVerdict | undefined = annotations[Annotations.rebootOk] ? valid : undefined,
  unschedulable = true,
) => agentStep({ annotations, bootId: 'boot-2', grant: verdict, detection, rebootRequested, unschedulable });

test('publishes a detected need and clears it when gone; unknown changes nothing', () => {
  assert.deepEqual(step({}, needed).patch, {
    [Annotations.rebootNeeded]: 'true',
    [Annotations.rebootNeededReason]: 'kernel updated',
  });
  assert.deepEqual(
    step({ [Annotations.rebootNeeded]: 'true', [Annotations.rebootNeededReason]: 'kernel updated' }, needed),
    {},
  );
  assert.deepEqual(step({ [Annotations.rebootNeeded]: 'true' }, notNeeded).patch, {
    [Annotations.rebootNeeded]: null,
  });
  assert.deepEqual(step({ [Annotations.rebootNeeded]: 'true' }, unknown), {}, 'unknown keeps a known need');
  assert.deepEqual(step({}, unknown), {}, 'unknown never creates a need');
});

test('a fresh grant: mark in-progress with the current boot ID, then reboot', () => {
  const s = step(grant, needed);
  assert.deepEqual(s.patch, { [Annotations.rebootInProgress]: 'true', [Annotations.bootIdBefore]: 'boot-2' });
  assert.equal(s.reboot, true);
  assert.deepEqual(step(grant, needed, true), {}, 'once per process');
});

test('a valid grant on a node someone uncordoned since its drain reboots nothing, and writes nothing', () => {
  const s = step(grant, needed, false, valid, false);
  assert.equal(s.reboot, undefined);
  assert.equal(s.patch, undefined);
  assert.match(s.log?.message ?? '', /schedulable/);
  const marked = { ...grant, [Annotations.rebootInProgress]: 'true', [Annotations.bootIdBefore]: 'boot-2' };
  assert.equal(
    step(marked, needed, false, valid, false).reboot,
    undefined,
    'not after an agent restart either',
  );
  assert.equal(step(marked, needed, false, valid, true).reboot, true, 'cordoned again: it reboots');
});

test('a grant the operator did not give reboots nothing, and the need is still reported', () => {
  const forgeries: Array<Record<string, string>> = [
    { [Annotations.rebootOk]: 'true' },
    { [Annotations.rebootOk]: 'true', [Annotations.state]: Phase.idle },
    grant,
  ];
  for (const annotations of forgeries) {
    const s = step(annotations, needed, false, forged);
    assert.equal(s.reboot, undefined);
    assert.deepEqual(s.patch, {
      [Annotations.rebootNeeded]: 'true',
      [Annotations.rebootNeededReason]: 'kernel updated',
    });
    assert.match(s.log?.message ?? '', /ignoring nuo\.dev\/reboot-ok: its signature is not the operator key/);
  }
  const inProgress = {
    ...grant,
    [Annotations.rebootInProgress]: 'true',
    [Annotations.bootIdBefore]: 'boot-2',
  };
  assert.equal(step(inProgress, needed, false, forged).reboot, undefined, 'not even to re-issue a reboot');
});

test('a grant for an earlier boot never causes a reboot', () => {
  const restored = step({ [Annotations.rebootOk]: 'v1.old.grant' }, needed, false, otherBoot);
  assert.equal(restored.reboot, undefined, 'copied back onto an idle node: ignored');
  assert.deepEqual(restored.patch, {
    [Annotations.rebootNeeded]: 'true',
    [Annotations.rebootNeededReason]: 'kernel updated',
  });
  const s = step(grant, needed, false, otherBoot);
  assert.equal(s.reboot, undefined);
  assert.deepEqual(s.patch, {
    [Annotations.rebootInProgress]: 'true',
    [Annotations.bootIdBefore]: REBOOTED_BEFORE_GRANT,
  });
});

test('after the boot: wait for the operator to withdraw the grant and move the node on, then clear the markers', () => {
  const after = {
    ...grant,
    [Annotations.rebootInProgress]: 'true',
    [Annotations.bootIdBefore]: 'boot-1',
  };
  assert.deepEqual(step(after, needed, false, otherBoot), {}, 'grant still there: no reboot, no change');
  assert.deepEqual(step(after, needed, false, forged), {}, 'whoever wrote it: it is withdrawn first');
  const withdrawn = {
    [Annotations.rebootInProgress]: 'true',
    [Annotations.bootIdBefore]: 'boot-1',
    [Annotations.rebootNeeded]: 'true',
  };
  const s = step(withdrawn, notNeeded);
  assert.equal(s.reboot, undefined);
  assert.deepEqual(s.patch, {
    [Annotations.rebootInProgress]: null,
    [Annotations.bootIdBefore]: null,
    [Annotations.rebootNeeded]: null,
  });
  // A grant someone else removed while the operator still has the node in a reboot phase, or Failed
  // (its reboot outlasted the timeout): the marker stays, so the operator sees the reboot happened.
  for (const phase of [Phase.rebootGranted, Phase.rebooting, Phase.failed]) {
    assert.deepEqual(step({ ...withdrawn, [Annotations.state]: phase }, notNeeded), {}, `kept in ${phase}`);
  }
  assert.equal(
    step({ ...withdrawn, [Annotations.state]: Phase.afterReboot }, notNeeded).patch?.[
      Annotations.rebootInProgress
    ],
    null,
    'cleared once the operator moved the node on',
  );
  const late = { ...withdrawn, [Annotations.agentProblem]: 'still up 10m after the reboot was requested' };
  assert.equal(
    step(late, notNeeded).patch?.[Annotations.agentProblem],
    null,
    'the problem is over after the boot',
  );
});

test('in progress on the same boot: re-issue the reboot once per process, never loop', () => {
  const same = {
    ...grant,
    [Annotations.rebootInProgress]: 'true',
    [Annotations.bootIdBefore]: 'boot-2',
  };
  assert.equal(step(same, needed).reboot, true);
  assert.deepEqual(step(same, needed, true), {});
  const withdrawnSameBoot = { [Annotations.rebootInProgress]: 'true', [Annotations.bootIdBefore]: 'boot-2' };
  assert.deepEqual(step(withdrawnSameBoot, needed), {}, 'no grant: nothing to do');
});

test('mirrors the update engine status', () => {
  const s = agentStep({
    annotations: {},
    bootId: 'b',
    grant: undefined,
    rebootRequested: false,
    unschedulable: false,
    detection: {
      need: Need.needed,
      reason: 'update_engine: UPDATE_STATUS_UPDATED_NEED_REBOOT',
      update: {
        status: 'UPDATE_STATUS_UPDATED_NEED_REBOOT',
        newVersion: '4152.2.0',
        lastCheckedTime: new Date('2026-11-21T11:30:00Z'),
      },
    },
  });
  assert.equal(s.patch?.[Annotations.status], 'UPDATE_STATUS_UPDATED_NEED_REBOOT');
  assert.equal(s.patch?.[Annotations.newVersion], '4152.2.0');
  assert.equal(s.patch?.[Annotations.lastCheckedTime], '2026-11-21T11:30:00.000Z');
});
