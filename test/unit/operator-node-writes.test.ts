import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { Annotations as A, Labels as L, ScaleDownProtection as P, Taints } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import { type NodeWrite, patchFor, type WriteAction } from '../../src/operator/write/node-writes.ts';

const NOW = new Date('2026-11-24T12:00:00Z');
const T = NOW.toISOString();
const hooks = { beforeRebootAnnotations: ['hook/before'], afterRebootAnnotations: ['hook/after'] };
const none = { beforeRebootAnnotations: [], afterRebootAnnotations: [] };
const node = (annotations: Record<string, string> = {}, tainted = false): V1Node => ({
  metadata: { name: 'n', annotations },
  spec: tainted ? { taints: [{ key: Taints.rebootPending, effect: 'PreferNoSchedule' }] } : {},
});
const phase = (to: string, reason: string) => ({ [A.state]: to, [A.stateReason]: reason, [A.stateSince]: T });
const noHookLabels = { [L.beforeReboot]: null, [L.afterReboot]: null };
/** Both autoscalers told to leave the node alone, recorded as nuo's. */
const BOTH = `${P.clusterAutoscaler},${P.karpenter}`;
const guarded = { [P.clusterAutoscaler]: 'true', [P.karpenter]: 'true', [A.scaleDownProtection]: BOTH };
const unguarded = { [P.clusterAutoscaler]: null, [P.karpenter]: null, [A.scaleDownProtection]: null };

test('each step writes exactly its keys: action × node × hooks → one patch', () => {
  const table: Array<[string, WriteAction, V1Node, typeof hooks, NodeWrite]> = [
    [
      'Pending, with its taint',
      { type: 'pending', node: 'n', reason: 'waiting', taint: 1 },
      node(),
      none,
      { annotations: phase(Phase.pending, 'waiting'), taint: 1 },
    ],
    [
      'Pending over a count nuo never wrote',
      { type: 'pending', node: 'n', reason: 'waiting' },
      node({ [A.failures]: 'abc' }),
      none,
      { annotations: { ...phase(Phase.pending, 'waiting'), [A.failures]: null } },
    ],
    [
      'Pending over a loop count nuo never wrote (a valid failure count kept)',
      { type: 'pending', node: 'n', reason: 'waiting' },
      node({ [A.ineffectiveReboots]: '-7', [A.failures]: '2' }),
      none,
      { annotations: { ...phase(Phase.pending, 'waiting'), [A.ineffectiveReboots]: null } },
    ],
    [
      'Idle over a loop count nuo never wrote: removed, or every pass would write Idle again',
      { type: 'transition', node: 'n', to: Phase.idle, reason: 'no reboot needed' },
      node({ [A.ineffectiveReboots]: '-7' }),
      none,
      {
        annotations: {
          ...phase(Phase.idle, 'no reboot needed'),
          [A.ineffectiveReboots]: null,
          [A.failures]: null,
        },
        labels: noHookLabels,
      },
    ],
    [
      'a reason',
      { type: 'explain', node: 'n', reason: 'r' },
      node(),
      none,
      { annotations: { [A.stateReason]: 'r' } },
    ],
    ['a taint alone', { type: 'taint', node: 'n', count: 0 }, node(), none, { annotations: {}, taint: 0 }],
    [
      'a foreign grant removed',
      { type: 'revoke', node: 'n', reason: 'r' },
      node(),
      none,
      { annotations: { [A.rebootOk]: null } },
    ],
    [
      'admitted, no hooks: Draining and cordoned in one write',
      { type: 'admit', node: 'n', reason: 'r', for: 'Reboot' },
      node(),
      none,
      {
        annotations: { ...phase(Phase.draining, 'admitted, no before-reboot hooks; draining'), ...guarded },
        cordon: true,
      },
    ],
    // The annotation as the cluster autoscaler reads it (cluster-autoscaler/core/scaledown/eligibility/
    // eligibility.go, HasNoScaleDownAnnotation: `"true"` only), written by a person.
    [
      "admitted where a person disabled the cluster autoscaler's scale-down: theirs kept, not recorded as nuo's",
      { type: 'admit', node: 'n', reason: 'r', for: 'Reboot' },
      node({ [P.clusterAutoscaler]: 'true' }),
      none,
      {
        annotations: {
          ...phase(Phase.draining, 'admitted, no before-reboot hooks; draining'),
          [P.karpenter]: 'true',
          [A.scaleDownProtection]: P.karpenter,
        },
        cordon: true,
      },
    ],
    [
      'admitted where both are someone else\'s (even Karpenter\'s "false"): nothing of them written',
      { type: 'admit', node: 'n', reason: 'r', for: 'Reboot' },
      node({ [P.clusterAutoscaler]: 'true', [P.karpenter]: 'false' }),
      none,
      { annotations: phase(Phase.draining, 'admitted, no before-reboot hooks; draining'), cordon: true },
    ],
    [
      "an admission's write redone: the protection nuo set is still its own",
      { type: 'transition', node: 'n', to: Phase.beforeReboot, reason: 'redone' },
      node({ [P.clusterAutoscaler]: 'true', [P.karpenter]: 'true', [A.scaleDownProtection]: P.karpenter }),
      none,
      {
        annotations: {
          ...phase(Phase.draining, 'admitted, no before-reboot hooks; draining'),
          [P.karpenter]: 'true',
          [A.scaleDownProtection]: P.karpenter,
        },
        cordon: true,
      },
    ],
    [
      'a Plan that neither drains nor cordons still protects its node from the autoscalers',
      {
        type: 'admit',
        node: 'n',
        reason: 'r',
        for: 'Plan',
        plan: { ref: 'ns/p', hash: 'h', version: 'v', reboot: false, prepare: 'none' },
      },
      node(),
      none,
      {
        annotations: {
          ...phase(Phase.upgrading, 'admitted for Plan ns/p; its Job starts'),
          [A.plan]: 'ns/p',
          ...guarded,
        },
      },
    ],
    [
      'admitted with hooks: their label set, stale hook values cleared',
      { type: 'admit', node: 'n', reason: 'r', for: 'Reboot' },
      node({ 'hook/before': 'true' }),
      hooks,
      {
        annotations: {
          ...phase(Phase.beforeReboot, 'waiting for before-reboot hooks: hook/before'),
          'hook/before': null,
          ...guarded,
        },
        labels: { [L.beforeReboot]: 'true' },
      },
    ],
    [
      'hooks passed: Draining, their label and values gone, cordoned',
      { type: 'transition', node: 'n', to: Phase.draining, reason: 'hooks done' },
      node(),
      hooks,
      {
        annotations: { ...phase(Phase.draining, 'hooks done'), 'hook/before': null },
        labels: { [L.beforeReboot]: null },
        cordon: true,
      },
    ],
    [
      'rebooted: the grant withdrawn, after-reboot hooks asked for afresh',
      { type: 'transition', node: 'n', to: Phase.afterReboot, reason: 'back', clearGrant: true },
      node(),
      hooks,
      {
        annotations: { ...phase(Phase.afterReboot, 'back'), [A.rebootOk]: null, 'hook/after': null },
        labels: { [L.afterReboot]: 'true' },
      },
    ],
    [
      'failed: one more failure counted',
      { type: 'transition', node: 'n', to: Phase.failed, reason: 'late', failed: true },
      node({ [A.failures]: '2' }),
      none,
      { annotations: { ...phase(Phase.failed, 'late'), [A.failures]: '3' } },
    ],
    [
      'Idle outside an attempt: counts, hooks and their labels cleared',
      { type: 'transition', node: 'n', to: Phase.idle, reason: 'no reboot needed' },
      node(),
      hooks,
      {
        annotations: {
          ...phase(Phase.idle, 'no reboot needed'),
          [A.failures]: null,
          'hook/before': null,
          'hook/after': null,
        },
        labels: noHookLabels,
      },
    ],
    [
      'the grant, with its phase',
      { type: 'grant', node: 'n', message: 'drained 3 pods', grant: 'v1.x.y' },
      node(),
      none,
      {
        annotations: {
          ...phase(Phase.rebootGranted, 'drained 3 pods; reboot granted'),
          [A.rebootOk]: 'v1.x.y',
        },
      },
    ],
    [
      'aborted: Pending, one more failure, grant, hooks and the protection nuo set gone',
      { type: 'abort', node: 'n', reason: 'drain timed out' },
      node({ [A.failures]: '1', ...guarded }),
      hooks,
      {
        annotations: {
          ...phase(Phase.pending, 'drain timed out; retrying after backoff'),
          [A.failures]: '2',
          [A.rebootOk]: null,
          ...unguarded,
          'hook/before': null,
          'hook/after': null,
        },
        labels: noHookLabels,
      },
    ],
    [
      'aborted at its drain: one more failure and one more drain failed in a row',
      { type: 'abort', node: 'n', reason: 'drain timed out', drainFailed: true },
      node({ [A.failures]: '3' }),
      none,
      {
        annotations: {
          ...phase(Phase.pending, 'drain timed out; retrying after backoff'),
          [A.failures]: '4',
          [A.drainFailures]: '1',
          [A.rebootOk]: null,
        },
        labels: noHookLabels,
      },
    ],
    [
      'aborted after its drain (a hook timed out): the count of drains failed in a row is left alone',
      { type: 'abort', node: 'n', reason: 'before-reboot hooks timed out' },
      node({ [A.failures]: '1', [A.drainFailures]: '1' }),
      none,
      {
        annotations: {
          ...phase(Phase.pending, 'before-reboot hooks timed out; retrying after backoff'),
          [A.failures]: '2',
          [A.rebootOk]: null,
        },
        labels: noHookLabels,
      },
    ],
    [
      'the grant after a drain that succeeded ends the row of failed drains',
      { type: 'grant', node: 'n', message: 'drained 3 pods', grant: 'v1.x.y' },
      node({ [A.failures]: '2', [A.drainFailures]: '2' }),
      none,
      {
        annotations: {
          ...phase(Phase.rebootGranted, 'drained 3 pods; reboot granted'),
          [A.rebootOk]: 'v1.x.y',
          [A.drainFailures]: null,
        },
      },
    ],
    [
      "a Plan's Job starting after a drain that succeeded ends the row of failed drains",
      { type: 'transition', node: 'n', to: Phase.upgrading, reason: 'drained; its Job starts' },
      node({ [A.drainFailures]: '1' }),
      none,
      { annotations: { ...phase(Phase.upgrading, 'drained; its Job starts'), [A.drainFailures]: null } },
    ],
    [
      'Pending over a count past the largest safe integer (it would read rounded): named malformed, removed',
      { type: 'pending', node: 'n', reason: 'waiting' },
      node({ [A.failures]: '99999999999999999999' }),
      none,
      { annotations: { ...phase(Phase.pending, 'waiting'), [A.failures]: null } },
    ],
    [
      'Pending over a drain count nuo never wrote',
      { type: 'pending', node: 'n', reason: 'waiting' },
      node({ [A.drainFailures]: 'x' }),
      none,
      { annotations: { ...phase(Phase.pending, 'waiting'), [A.drainFailures]: null } },
    ],
    [
      'aborted for the last time under onFailure Skip: labelled skipped, the reason says how to retry',
      { type: 'abort', node: 'n', reason: 'drain timed out', drainFailed: true, skip: true },
      node({ [A.failures]: '2', [A.drainFailures]: '2' }),
      hooks,
      {
        annotations: {
          ...phase(
            Phase.pending,
            'drain timed out; skipped: its drain failed 3 time(s) in a row; remove the label nuo.dev/skipped to try again',
          ),
          [A.failures]: '3',
          [A.drainFailures]: '3',
          [A.rebootOk]: null,
          'hook/before': null,
          'hook/after': null,
        },
        labels: { ...noHookLabels, 'nuo.dev/skipped': 'true' },
      },
    ],
    [
      'completed: Idle, every protocol key of the attempt gone, the taint off, the protection nuo set gone',
      { type: 'complete', node: 'n', reason: 'rebooted and healthy' },
      node({ [A.rebootRequested]: '2026-11-24T11:00:00Z', [A.ineffectiveReboots]: '1', ...guarded }, true),
      hooks,
      {
        annotations: {
          ...phase(Phase.idle, 'rebooted and healthy'),
          ...unguarded,
          [A.rebootOk]: null,
          [A.failures]: null,
          [A.rebootRequested]: null,
          [A.ineffectiveReboots]: null,
          'hook/before': null,
          'hook/after': null,
        },
        labels: noHookLabels,
        taint: 0,
      },
    ],
    [
      'completed with the need still there: one more ineffective reboot; a later request kept',
      { type: 'complete', node: 'n', reason: 'rebooted and healthy', needSurvived: true },
      node({ [A.rebootRequested]: '2026-11-25T00:00:00Z', [A.ineffectiveReboots]: '1' }),
      none,
      {
        annotations: {
          ...phase(Phase.idle, 'rebooted and healthy'),
          [A.rebootOk]: null,
          [A.failures]: null,
          [A.ineffectiveReboots]: '2',
        },
        labels: noHookLabels,
      },
    ],
    [
      "an attempt ended (Pending): only the protection nuo set removed, a person's left",
      { type: 'end', node: 'n', reason: 'no slot', to: Phase.pending },
      node({ [P.clusterAutoscaler]: 'true', [P.karpenter]: 'true', [A.scaleDownProtection]: P.karpenter }),
      none,
      {
        annotations: {
          ...phase(Phase.pending, 'no slot'),
          [A.rebootOk]: null,
          [P.karpenter]: null,
          [A.scaleDownProtection]: null,
        },
      },
    ],
    [
      'an attempt ended (Idle): a record naming a key that is no protection removes only the record',
      { type: 'end', node: 'n', reason: 'need gone', to: Phase.idle },
      node({ [A.scaleDownProtection]: 'example.com/other' }),
      none,
      {
        annotations: {
          ...phase(Phase.idle, 'need gone'),
          [A.rebootOk]: null,
          [A.scaleDownProtection]: null,
          [A.failures]: null,
        },
        labels: noHookLabels,
      },
    ],
  ];
  for (const [what, action, n, config, want] of table) {
    assert.deepEqual(patchFor(action, viewNode(n), config, NOW), want, what);
  }
});
