import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import type { NodeStep } from '../../src/operator/decider.ts';
import { redecidedAt } from '../../src/operator/node-steps.ts';

const DECIDED = new Date('2026-11-23T09:19:59.000Z');
const NOW = new Date('2026-11-23T09:20:04.000Z');
const node = (state?: string) =>
  viewNode({ metadata: { name: 'n', annotations: state ? { [Annotations.state]: state } : {} } });
const admit = { type: 'admit', node: 'n', reason: 'reboot needed' } as NodeStep;
const transition = { type: 'transition', node: 'n', to: Phase.rebooting, reason: 'rebooting' } as NodeStep;

test("a step redone after a conflict: an admission not written yet keeps its decision's time, anything else is decided now", () => {
  const table: Array<[string, NodeStep, string | undefined, Date]> = [
    ['an admission whose node write conflicted, the node still Pending', admit, Phase.pending, DECIDED],
    ['the same, the node never touched (Idle)', admit, undefined, DECIDED],
    ['an admission whose node another leader moved on meanwhile', admit, Phase.beforeReboot, NOW],
    ['any other step', transition, Phase.rebootGranted, NOW],
  ];
  for (const [what, action, state, want] of table)
    assert.equal(redecidedAt(action, node(state), DECIDED, NOW), want, what);
});
