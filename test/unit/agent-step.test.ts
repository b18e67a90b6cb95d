import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Need } from '../../src/agent/os.ts';
import { agentStep, REBOOTED_BEFORE_GRANT } from '../../src/agent/step.ts';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';

const BOOTED = new Date('2026-11-21T10:00:00Z');
const needed = { need: Need.needed, reason: 'kernel updated' } as const;
const notNeeded = { need: Need.notNeeded, reason: 'up to date' } as const;
const unknown = { need: Need.unknown, reason: 'update_engine not on the bus' } as const;
const grant = (at: string) => ({
  [Annotations.rebootOk]: 'true',
  [Annotations.state]: Phase.rebootGranted,
  [Annotations.stateSince]: at,
});
const step = (
  annotations: Record<string, string>,
  detection = notNeeded as typeof needed | typeof notNeeded | typeof unknown,
  rebootRequested = false,
) => agentStep({ annotations, bootId: 'boot-2', bootedAt: BOOTED, detection, rebootRequested });

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
  const s = step(grant('2026-11-21T11:00:00Z'), needed);
  assert.deepEqual(s.patch, { [Annotations.rebootInProgress]: 'true', [Annotations.bootIdBefore]: 'boot-2' });
  assert.equal(s.reboot, true);
  assert.deepEqual(step(grant('2026-11-21T11:00:00Z'), needed, true), {}, 'once per process');
});

test('a grant older than this boot never causes a reboot', () => {
  const s = step(grant('2026-11-21T09:00:00Z'), needed);
  assert.equal(s.reboot, undefined);
  assert.deepEqual(s.patch, {
    [Annotations.rebootInProgress]: 'true',
    [Annotations.bootIdBefore]: REBOOTED_BEFORE_GRANT,
  });
});

test('after the boot: wait for the operator to withdraw the grant, then clear the markers', () => {
  const after = {
    ...grant('2026-11-21T09:00:00Z'),
    [Annotations.rebootInProgress]: 'true',
    [Annotations.bootIdBefore]: 'boot-1',
  };
  assert.deepEqual(step(after, needed), {}, 'grant still there: no reboot, no change');
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
});

test('in progress on the same boot: re-issue the reboot once per process, never loop', () => {
  const same = {
    ...grant('2026-11-21T11:00:00Z'),
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
    bootedAt: BOOTED,
    rebootRequested: false,
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
