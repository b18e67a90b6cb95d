import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { Action } from '../../src/operator/decide/action.ts';
import type { DecideConfig } from '../../src/operator/decide/decide-input.ts';
import type { ChecksReading } from '../../src/operator/decide/health-gate.ts';
import { viewNode } from '../../src/operator/decide/node-view.ts';
import { PAUSED_HOLDER, stepHolder } from '../../src/operator/decide/phase-steps.ts';
import { decideConfig } from './operator-fixtures.ts';

const NOW = new Date('2026-11-24T12:00:00Z');
const WARN = { name: 'ceph', healthy: false, reading: 'Widget ceph: false' };
const ago = (s: number) => new Date(NOW.getTime() - s * 1000).toISOString();
/** `nuo release`'s request for the Failed phase entered `age` seconds ago. */
const release = (age: number) => JSON.stringify({ failedSince: ago(age), reason: 'machine replaced' });
const config: DecideConfig = {
  ...decideConfig,
  drainTimeoutMs: 60_000,
  rebootTimeoutMs: 60_000,
  returnTimeoutMs: 60_000,
  beforeRebootAnnotations: ['hook/before'],
};

interface Case {
  what: string;
  phase: string;
  age?: number;
  annotations?: Record<string, string>;
  ready?: boolean;
  readyFor?: number;
  bootId?: string;
  draining?: boolean;
  healthy?: boolean;
  /** The pool's health checks as last read (absent: it has none). */
  checks?: ChecksReading;
  /** spec.unschedulable (default true: nuo's cordon stands from Draining on). */
  unschedulable?: boolean;
  /** A grant on the node (default: in RebootGranted). */
  grant?: boolean;
  /** The pool's reboot.failedSlotTTL in ms (absent: none). */
  ttl?: number;
  /** The action's type and, for a transition, where to. */
  want: string[];
  wakeIn?: number;
}

const cases: Case[] = [
  {
    what: 'admission not written yet',
    phase: Phase.pending,
    annotations: { [Annotations.rebootNeeded]: 'true' },
    want: ['transition BeforeReboot'],
  },
  {
    what: 'hooks done',
    phase: Phase.beforeReboot,
    annotations: { 'hook/before': 'true' },
    want: ['transition Draining'],
  },
  { what: 'hooks pending', phase: Phase.beforeReboot, age: 10, want: ['explain'], wakeIn: 50_001 },
  { what: 'hooks too late', phase: Phase.beforeReboot, age: 61, want: ['abort'] },
  { what: 'draining, no drain here', phase: Phase.draining, want: ['drain'] },
  { what: 'draining, drain running', phase: Phase.draining, draining: true, want: [] },
  { what: 'granted, agent silent', phase: Phase.rebootGranted, age: 10, want: [], wakeIn: 50_001 },
  { what: 'granted, agent never started', phase: Phase.rebootGranted, age: 61, want: ['transition Failed'] },
  {
    what: 'granted, the grant removed by someone else: drained again',
    phase: Phase.rebootGranted,
    grant: false,
    want: ['transition Draining'],
  },
  {
    what: 'granted, uncordoned by someone else since: drained again',
    phase: Phase.rebootGranted,
    unschedulable: false,
    want: ['transition Draining'],
  },
  {
    what: 'granted, agent rebooting though uncordoned since its mark: the reboot goes on',
    phase: Phase.rebootGranted,
    unschedulable: false,
    annotations: { [Annotations.rebootInProgress]: 'true', [Annotations.bootIdBefore]: 'boot-1' },
    want: ['transition Rebooting'],
  },
  {
    what: 'granted, agent rebooting',
    phase: Phase.rebootGranted,
    annotations: { [Annotations.rebootInProgress]: 'true', [Annotations.bootIdBefore]: 'boot-1' },
    want: ['transition Rebooting'],
  },
  {
    what: 'granted, already back',
    phase: Phase.rebootGranted,
    annotations: { [Annotations.rebootInProgress]: 'true', [Annotations.bootIdBefore]: 'boot-1' },
    bootId: 'boot-2',
    want: ['transition AfterReboot'],
  },
  {
    what: 'rebooting, boot unchanged, in time',
    phase: Phase.rebooting,
    age: 10,
    annotations: { [Annotations.bootIdBefore]: 'boot-1' },
    want: [],
    wakeIn: 50_001,
  },
  {
    what: 'rebooting, boot unchanged, too late',
    phase: Phase.rebooting,
    age: 61,
    annotations: { [Annotations.bootIdBefore]: 'boot-1' },
    want: ['transition Failed'],
  },
  {
    what: 'after reboot, NotReady in time',
    phase: Phase.afterReboot,
    age: 10,
    ready: false,
    want: ['explain'],
    wakeIn: 50_001,
  },
  {
    what: 'after reboot, never Ready',
    phase: Phase.afterReboot,
    age: 61,
    ready: false,
    want: ['transition Failed'],
  },
  {
    what: 'after reboot, soaking',
    phase: Phase.afterReboot,
    readyFor: 10,
    want: ['explain'],
    wakeIn: 20_000,
  },
  { what: 'after reboot, soaked, pods not read yet', phase: Phase.afterReboot, readyFor: 31, want: [] },
  {
    what: 'after reboot, soaked and healthy',
    phase: Phase.afterReboot,
    readyFor: 31,
    healthy: true,
    want: ['complete'],
  },
  {
    what: 'after reboot, healthy, agent not back yet',
    phase: Phase.afterReboot,
    readyFor: 31,
    healthy: true,
    annotations: { [Annotations.rebootInProgress]: 'true' },
    want: ['explain'],
  },
  {
    what: 'failed, still down',
    phase: Phase.failed,
    ready: false,
    bootId: 'boot-2',
    annotations: { [Annotations.bootIdBefore]: 'boot-1' },
    want: [],
  },
  {
    what: 'failed, released by a person naming this Failed phase: the attempt ends',
    phase: Phase.failed,
    age: 100,
    ready: false,
    annotations: { [Annotations.release]: release(100) },
    want: ['abort'],
  },
  {
    what: 'failed, a release that names an earlier Failed phase frees nothing',
    phase: Phase.failed,
    age: 100,
    ready: false,
    annotations: { [Annotations.release]: release(5000) },
    want: [],
  },
  {
    what: 'failed, released while its agent marks reboot-in-progress: refused, and said',
    phase: Phase.failed,
    age: 100,
    annotations: { [Annotations.release]: release(100), [Annotations.rebootInProgress]: 'true' },
    want: ['explain'],
  },
  {
    what: 'failed, released while its agent marks a reboot from an earlier boot (back, NotReady): the attempt ends',
    phase: Phase.failed,
    age: 100,
    ready: false,
    bootId: 'boot-2',
    annotations: {
      [Annotations.release]: release(100),
      [Annotations.rebootInProgress]: 'true',
      [Annotations.bootIdBefore]: 'boot-1',
    },
    want: ['abort'],
  },
  {
    what: 'failed for longer than the policy failedSlotTTL: the attempt ends',
    phase: Phase.failed,
    age: 700,
    ready: false,
    ttl: 600_000,
    want: ['abort'],
  },
  {
    what: 'failed within failedSlotTTL: it looks again when the TTL ends',
    phase: Phase.failed,
    age: 100,
    ready: false,
    ttl: 600_000,
    want: [],
    wakeIn: 500_001,
  },
  {
    what: 'failed, came back',
    phase: Phase.failed,
    bootId: 'boot-2',
    annotations: { [Annotations.bootIdBefore]: 'boot-1' },
    want: ['transition AfterReboot'],
  },
  {
    what: 'after reboot, healthy, health checks read since its return and passing',
    phase: Phase.afterReboot,
    age: 40,
    readyFor: 31,
    healthy: true,
    checks: { at: NOW.getTime() - 10_000 },
    want: ['complete'],
  },
  {
    what: 'after reboot, entered by a leader whose clock ran 372 s ahead: a reading since this leader saw it back counts',
    phase: Phase.afterReboot,
    age: -372,
    readyFor: 31,
    healthy: true,
    checks: { at: NOW.getTime() - 10_000 },
    want: ['complete'],
  },
  {
    what: 'after reboot, healthy, health checks last read before its return: the next reading is awaited quietly',
    phase: Phase.afterReboot,
    age: 40,
    readyFor: 31,
    healthy: true,
    checks: { at: NOW.getTime() - 35_000 },
    want: [],
  },
  {
    what: 'after reboot, soaked, neither the pods nor the health checks read since: awaited quietly',
    phase: Phase.afterReboot,
    age: 40,
    readyFor: 31,
    checks: { at: NOW.getTime() - 35_000 },
    want: [],
  },
  {
    what: 'after reboot, healthy, a health check failing: it keeps its slot and says why',
    phase: Phase.afterReboot,
    age: 40,
    readyFor: 31,
    healthy: true,
    checks: { at: NOW.getTime() - 1000, failing: WARN },
    want: ['explain'],
  },
  {
    what: 'after reboot, healthy, the health checks never evaluated: it keeps its slot',
    phase: Phase.afterReboot,
    age: 40,
    readyFor: 31,
    healthy: true,
    checks: {},
    want: ['explain'],
  },
  {
    what: 'after reboot, soaking while a health check fails: only the soak is waited for yet',
    phase: Phase.afterReboot,
    age: 40,
    readyFor: 10,
    checks: { at: NOW.getTime() - 1000, failing: WARN },
    want: ['explain'],
    wakeIn: 20_000,
  },
];

const node = (c: Case): V1Node => ({
  metadata: {
    name: 'n',
    annotations: {
      [Annotations.state]: c.phase,
      [Annotations.stateSince]: ago(c.age ?? 0),
      ...((c.grant ?? c.phase === Phase.rebootGranted)
        ? { [Annotations.rebootOk]: 'v1.claim.signature' }
        : {}),
      ...c.annotations,
    },
  },
  spec: { unschedulable: c.unschedulable ?? true },
  status: {
    nodeInfo: { bootID: c.bootId ?? 'boot-1' } as never,
    conditions: [
      {
        type: 'Ready',
        status: c.ready === false ? 'False' : 'True',
        lastTransitionTime: ago(c.readyFor ?? 3600) as never,
      },
    ],
  },
});

const summary = (a: Action) => (a.type === 'transition' ? `transition ${a.to}` : a.type);

test('a slot holder steps by its phase: phase × what it sees → its next action, and when to look again', () => {
  for (const c of cases) {
    let wakeAt: number | undefined;
    const actions = stepHolder(viewNode(node(c)), {
      config: {
        ...config,
        ...(c.checks ? { healthChecks: c.checks } : {}),
        ...(c.ttl === undefined ? {} : { failedSlotTtlMs: c.ttl }),
      },
      now: NOW,
      draining: new Set(c.draining ? ['n'] : []),
      health: new Map(c.healthy ? [['n', { daemonSetPodsReady: true, detail: '1 ready' }]] : []),
      wake: (at) => {
        if (at > NOW.getTime() && (wakeAt === undefined || at < wakeAt)) wakeAt = at;
      },
      slotOf: () => undefined,
    });
    assert.deepEqual(actions.map(summary), c.want, c.what);
    assert.equal(wakeAt === undefined ? undefined : wakeAt - NOW.getTime(), c.wakeIn, `${c.what}: wake`);
  }
});

test('a paused holder keeps its slot and only says so, once', () => {
  const paused = viewNode(
    node({ what: '', phase: Phase.draining, want: [], annotations: { [Annotations.paused]: 'true' } }),
  );
  const ctx = {
    config,
    now: NOW,
    draining: new Set<string>(),
    health: new Map(),
    wake: () => {},
    slotOf: () => undefined,
  };
  assert.deepEqual(stepHolder(paused, ctx), [{ type: 'explain', node: 'n', reason: PAUSED_HOLDER }]);
  assert.deepEqual(stepHolder({ ...paused, stateReason: PAUSED_HOLDER }, ctx), []);
});

test('a finished node held by a failing health check names the check and what it read', () => {
  const soaked = viewNode(node({ what: '', phase: Phase.afterReboot, age: 40, readyFor: 31, want: [] }));
  const reasons = (checks: ChecksReading | undefined) =>
    stepHolder(soaked, {
      config: checks ? { ...config, healthChecks: checks } : config,
      now: NOW,
      draining: new Set<string>(),
      health: new Map([['n', { daemonSetPodsReady: true, detail: '1 ready' }]]),
      wake: () => {},
      slotOf: () => undefined,
    }).map((a) => (a.type === 'explain' ? a.reason : a.type));
  assert.deepEqual(reasons({ at: NOW.getTime(), failing: WARN }), [
    'health gate: waiting for the health checks (health check ceph fails)',
  ]);
  assert.deepEqual(reasons({}), ['health gate: waiting for the health checks (not evaluated yet)']);
  assert.deepEqual(reasons(undefined), ['complete'], 'a pool without health checks is not held');
});
