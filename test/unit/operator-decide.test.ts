import assert from 'node:assert/strict';
import { describe, it, test } from 'node:test';
import type { V1Node, V1NodeCondition, V1NodeSystemInfo } from '@kubernetes/client-node';
import { AgentProtocol, Annotations, protocolKeys, Taints } from '../../src/api/keys.ts';
import { PHASES, Phase } from '../../src/api/phases.ts';
import { parseSelector } from '../../src/kube/selector.ts';
import type { Action } from '../../src/operator/decide/action.ts';
import { speaking } from '../../src/operator/decide/agent-protocol.ts';
import { budgetSlots, parseMaxUnavailable } from '../../src/operator/decide/budget.ts';
import { decide } from '../../src/operator/decide/decide.ts';
import type { DecideConfig } from '../../src/operator/decide/decide-input.ts';
import {
  HEALTH_LEAD_MS,
  HEALTH_REREAD_MS,
  healthDue,
  healthGated,
  healthRereadDue,
} from '../../src/operator/decide/health-gate.ts';
import type { Ledger } from '../../src/operator/decide/ledger-view.ts';
import {
  isPendingTaint,
  slimNode,
  viewNode,
  withPendingTaints,
} from '../../src/operator/decide/node-view.ts';
import { landingExists, softTaintsMost } from '../../src/operator/decide/taints.ts';
import { unmanagedReason, unmanagedWrites } from '../../src/operator/decide/unmanaged.ts';
import { sameView } from '../../src/operator/decide/view-change.ts';
import {
  ago,
  decideConfig,
  NOW,
  type NodeOpts,
  needs,
  node,
  ofType,
  run,
  state,
} from './operator-fixtures.ts';

const config: DecideConfig = decideConfig;

describe('budget arithmetic', () => {
  test('counts and percentages', () => {
    const table: Array<[string, number, number]> = [
      ['1', 10, 1],
      ['3', 2, 3],
      ['10%', 100, 10],
      ['10%', 5, 1],
      ['25%', 10, 2],
      ['100%', 7, 7],
      ['50%', 0, 0],
      ['2', 0, 0],
    ];
    for (const [text, eligible, want] of table) {
      assert.equal(budgetSlots(parseMaxUnavailable(text), eligible), want, `${text} of ${eligible}`);
    }
  });
  test('rejects nonsense', () => {
    for (const bad of ['0', '-1', '0%', '101%', 'one', '1.5', '']) {
      assert.throws(() => parseMaxUnavailable(bad), /positive count|percentage must be/, bad);
    }
  });
});

describe('label selectors', () => {
  test('match as Kubernetes does', () => {
    const labels = { role: 'worker', zone: 'a', gpu: '' };
    const table: Array<[string, boolean]> = [
      ['', true],
      ['role=worker', true],
      ['role==worker', true],
      ['role!=worker', false],
      ['role in (worker,infra)', true],
      ['zone notin (a)', false],
      ['gpu', true],
      ['!gpu', false],
      ['!missing', true],
      ['missing!=x', true],
      ['role=worker,zone in (b, c)', false],
    ];
    for (const [sel, want] of table) assert.equal(parseSelector(sel)(labels), want, sel);
  });
  test('reject malformed selectors with the bad term', () => {
    assert.throws(() => parseSelector('role=wor ker'), /invalid label selector term|invalid label/);
    assert.throws(() => parseSelector('-bad=x'), /invalid label key "-bad"/);
  });
});

describe('decide: admission', () => {
  test('a node that needs a reboot is admitted at once when a slot is free, else waits in Pending', () => {
    assert.deepEqual(ofType(run([node('a', { annotations: needs })]).actions, 'admit'), ['a']);
    const d = run([node('a', { annotations: { ...needs, ...state(Phase.pending, 10) } })]);
    assert.deepEqual(ofType(d.actions, 'admit'), ['a']);
    const full = run(
      [node('a', { annotations: needs }), node('b', { annotations: state(Phase.draining, 5) })],
      {
        ledger: { slots: { b: { since: ago(5) } } },
        draining: ['b'],
      },
    );
    assert.deepEqual(full.actions, [
      { type: 'pending', node: 'a', reason: 'waiting for a free slot (maxUnavailable 1)' },
    ]);
  });

  test('nodes already waiting in Pending go before Idle nodes that just started to need a reboot', () => {
    const d = run(
      [
        node('a', { annotations: { ...needs, ...state(Phase.idle, 900) } }),
        node('z', { annotations: { ...needs, ...state(Phase.pending, 10) } }),
        node('b', { annotations: needs }),
      ],
      { cfg: { maxUnavailable: parseMaxUnavailable('2') } },
    );
    assert.deepEqual(ofType(d.actions, 'admit'), ['z', 'a']);
    assert.deepEqual(ofType(d.actions, 'pending'), ['b']);
  });

  test('never admits more than the budget: oldest request first, ties by name', () => {
    const pending = (name: string, since: number) =>
      node(name, { annotations: { ...needs, ...state(Phase.pending, since) } });
    const d = run([pending('c', 50), pending('b', 100), pending('a', 100), pending('d', 10)], {
      cfg: { maxUnavailable: parseMaxUnavailable('2') },
    });
    assert.deepEqual(ofType(d.actions, 'admit'), ['a', 'b']);
    const waits = d.actions.filter((a) => a.type === 'explain');
    assert.deepEqual(
      waits.map((a) => a.node),
      ['c', 'd'],
    );
    assert.ok(
      waits.every((a) => a.type === 'explain' && a.reason === 'waiting for a free slot (maxUnavailable 2)'),
    );
  });

  test('NotReady nodes and cordoned nodes use up the budget', () => {
    const p = { annotations: { ...needs, ...state(Phase.pending, 10) } };
    const notReady = run([node('a', p), node('x', { ready: false })], {});
    assert.deepEqual(ofType(notReady.actions, 'admit'), []);
    assert.deepEqual(notReady.budget.unavailable, ['x']);
    const adminCordon = run([node('a', p), node('x', { unschedulable: true })]);
    assert.deepEqual(ofType(adminCordon.actions, 'admit'), []);
    const nuoCordonWithoutSlot = run([
      node('a', p),
      node('x', { unschedulable: true, annotations: { [Annotations.cordonedByNuo]: 'true' } }),
    ]);
    assert.deepEqual(
      ofType(nuoCordonWithoutSlot.actions, 'admit'),
      [],
      'a node nuo cordoned without a slot behind it (`nuo drain` by hand, a slot freed by hand) is disrupted all the same',
    );
    const attemptWithoutSlot = run([node('a', p), node('x', { annotations: state(Phase.draining, 5) })]);
    assert.deepEqual(ofType(attemptWithoutSlot.actions, 'admit'), []);
    assert.deepEqual(attemptWithoutSlot.budget.unavailable, ['x']);
  });

  test('a node unavailable already (cordoned by an admin, NotReady) takes its own place in the budget, never more', () => {
    const p = { ...needs, ...state(Phase.pending, 10) };
    const alone = run([node('x', { unschedulable: true, annotations: p }), node('b')]);
    assert.deepEqual(ofType(alone.actions, 'admit'), ['x'], 'cordoned by an admin, alone in a budget of 1');
    // (A NotReady node is held back by its own gate until it is Ready again.)
    for (const o of [{ unschedulable: true }, { ready: false }]) {
      const two = run([node('x', { ...o, annotations: p }), node('y', { unschedulable: true })]);
      assert.deepEqual(
        ofType(two.actions, 'admit'),
        [],
        `two unavailable in a budget of 1: ${JSON.stringify(o)}`,
      );
      const held = run(
        [node('x', { ...o, annotations: p }), node('h', { annotations: state(Phase.draining, 5) })],
        {
          ledger: { slots: { h: { since: ago(6) } } },
          draining: ['h'],
        },
      );
      assert.deepEqual(ofType(held.actions, 'admit'), [], `with a holder: ${JSON.stringify(o)}`);
    }
  });

  test('an admission not yet written on its node is withdrawn if the budget is exceeded since; else redone', () => {
    const ledger = { slots: { h: { since: ago(5), attempt: 2 }, x: { since: ago(60), attempt: 1 } } };
    const nodes = (adminCordon: boolean) => [
      node('h', { annotations: { ...needs, ...state(Phase.pending, 30) } }),
      node('x', {
        unschedulable: true,
        annotations: { ...state(Phase.draining, 50), [Annotations.cordonedByNuo]: 'true' },
      }),
      node('y', { unschedulable: adminCordon }),
    ];
    const over = run(nodes(true), {
      ledger,
      draining: ['x'],
      cfg: { maxUnavailable: parseMaxUnavailable('2') },
    });
    assert.deepEqual(
      ofType(over.actions, 'release'),
      ['h'],
      'withdrawn: x and y already use the budget of 2',
    );
    assert.deepEqual(ofType(over.actions, 'transition'), [], 'and its node is not written');
    assert.deepEqual(ofType(over.actions, 'admit'), []);
    const inFlight = run(nodes(true), {
      ledger,
      draining: ['x'],
      admitting: ['h'],
      cfg: { maxUnavailable: parseMaxUnavailable('2') },
    });
    assert.deepEqual(ofType(inFlight.actions, 'release'), [], 'not while its node write is in flight here');
    const room = run(nodes(false), {
      ledger,
      draining: ['x'],
      cfg: { maxUnavailable: parseMaxUnavailable('2') },
    });
    assert.deepEqual(ofType(room.actions, 'release'), []);
    const redo = room.actions.find((a) => a.type === 'transition' && a.node === 'h');
    assert.equal(redo?.type === 'transition' && redo.to, Phase.beforeReboot, 'redone while it fits');
  });

  test('an admission not yet written on its node is withdrawn while the pool admits nothing (a failing health check)', () => {
    // Campaign seed 13: node h deleted in Draining and registered again while a health check failed; the
    // new leader redid its admission's node write, starting a disruption the check held back.
    const ledger = { slots: { h: { since: ago(5), attempt: 2 }, x: { since: ago(60), attempt: 1 } } };
    const nodes = [
      node('h', { annotations: needs }),
      node('x', {
        unschedulable: true,
        annotations: { ...state(Phase.draining, 50), [Annotations.cordonedByNuo]: 'true' },
      }),
    ];
    const hold = { reason: 'waiting: health check ceph fails', detail: 'Widget ceph: false' };
    const cfg = { maxUnavailable: parseMaxUnavailable('2') };
    const held = run(nodes, { ledger, draining: ['x'], cfg: { ...cfg, hold } });
    assert.deepEqual(
      ofType(held.actions, 'release'),
      ['h'],
      'the unstarted admission is withdrawn; x, in progress, keeps its slot',
    );
    const why = held.actions.find((a) => a.type === 'release');
    assert.match(
      why?.type === 'release' ? why.reason : '',
      /withdrawn before it started: the pool admits nothing now \(health check ceph fails\)/,
    );
    assert.deepEqual(
      held.actions.filter((a) => a.type === 'transition' && a.node === 'h').length,
      0,
      'its node is not written',
    );
    const inFlight = run(nodes, { ledger, draining: ['x'], admitting: ['h'], cfg: { ...cfg, hold } });
    assert.deepEqual(ofType(inFlight.actions, 'release'), [], 'not while its node write is in flight here');
    const clear = run(nodes, { ledger, draining: ['x'], cfg });
    assert.deepEqual(ofType(clear.actions, 'release'), [], 'no hold, room in the budget: kept');
    const redo = clear.actions.find((a) => a.type === 'transition' && a.node === 'h');
    assert.equal(redo?.type === 'transition' && redo.to, Phase.beforeReboot, 'and redone');
  });

  test('slot holders in the ledger count, whatever their node says', () => {
    const d = run(
      [
        node('a', { annotations: { ...needs, ...state(Phase.pending, 10) } }),
        node('h', { annotations: state(Phase.draining, 5) }),
      ],
      { ledger: { slots: { h: { since: ago(6) } } }, draining: ['h'] },
    );
    assert.deepEqual(ofType(d.actions, 'admit'), []);
    assert.equal(d.budget.used, 1);
  });

  test('paused nodes, a cluster-wide pause, backoff and spacing hold admission back', () => {
    const p = (extra: Record<string, string> = {}) => ({
      annotations: { ...needs, ...state(Phase.pending, 10), ...extra },
    });
    assert.deepEqual(ofType(run([node('a', p({ [Annotations.paused]: 'true' }))]).actions, 'admit'), []);
    assert.deepEqual(
      ofType(run([node('a', p({ [Annotations.paused]: 'yes' }))]).actions, 'admit'),
      [],
      'malformed paused reads as paused',
    );
    assert.deepEqual(ofType(run([node('a', p())], { cfg: { paused: true } }).actions, 'admit'), []);
    // 2 failures: backoff 2 min from entering Pending 10 s ago.
    const backoff = run([node('a', p({ [Annotations.failures]: '2' }))]);
    assert.deepEqual(ofType(backoff.actions, 'admit'), []);
    assert.match(
      (backoff.actions[0] as { reason: string }).reason,
      /retry after 2026-11-21T12:01:50.000Z \(2 failure/,
    );
    const spaced = run([node('a', p()), node('b', p())], {
      cfg: { maxUnavailable: parseMaxUnavailable('5'), minGrantSpacingMs: 60_000 },
      ledger: { slots: {}, lastGrant: ago(120) },
    });
    assert.deepEqual(ofType(spaced.actions, 'admit'), ['a'], 'one grant per spacing interval');
  });

  test('a manual reboot-requested time counts as a need; a malformed one is ignored', () => {
    assert.deepEqual(
      ofType(run([node('a', { annotations: { [Annotations.rebootRequested]: ago(5) } })]).actions, 'admit'),
      ['a'],
    );
    // Ignored as a need; only named in the node's reason.
    assert.deepEqual(
      run([node('a', { annotations: { [Annotations.rebootRequested]: 'tomorrow' } })]).actions,
      [
        {
          type: 'explain',
          node: 'a',
          reason: `ignored malformed annotations: ${Annotations.rebootRequested}="tomorrow" is not an RFC 3339 time; ignored`,
        },
      ],
    );
  });

  test('malformed annotations are named in the one reason decide() writes, which then stays put', () => {
    // Regression: the controller used to write the problems into state-reason after decide() had written
    // its own reason ("paused"), and each pass undid the other's write: a write storm, forever.
    const cases: Record<string, string>[] = [
      { ...needs, ...state(Phase.pending, 10), [Annotations.paused]: 'yes' },
      { ...needs, ...state(Phase.pending, 10), [Annotations.failures]: 'lots' },
      { ...state(Phase.idle, 10), [Annotations.rebootNeeded]: 'maybe' },
      { [Annotations.rebootRequested]: 'tomorrow' },
      { ...needs, [Annotations.failures]: 'lots' },
    ];
    const busy = { annotations: state(Phase.draining, 5) };
    const opts = { ledger: { slots: { b: { since: ago(5) } } }, draining: ['b'] };
    for (const initial of cases) {
      // Apply a's writes pass after pass: it must settle within two passes (Pending, then its wait).
      let annotations = { ...initial };
      let passes = 0;
      for (; passes < 5; passes++) {
        const written = run([node('a', { annotations }), node('b', busy)], opts).actions.filter(
          (a) => a.node === 'a',
        );
        if (written.length === 0) break;
        assert.equal(written.length, 1, JSON.stringify(written));
        const w = written[0] as Action & { reason: string };
        assert.ok(w.type === 'pending' || w.type === 'explain', JSON.stringify(w));
        annotations = { ...annotations, [Annotations.stateReason]: w.reason };
        if (w.type === 'pending') annotations = { ...annotations, ...state(Phase.pending, 0) };
      }
      assert.ok(passes <= 2, `settled after ${passes} writes for ${JSON.stringify(initial)}`);
      assert.match(
        annotations[Annotations.stateReason] ?? '',
        /ignored malformed annotations: nuo\.dev\/\S+="(yes|lots|maybe|tomorrow)"/,
      );
    }
    // Once fixed, the reason about it is withdrawn.
    const fixed = run([
      node('a', {
        annotations: {
          ...state(Phase.idle, 10),
          [Annotations.stateReason]: 'ignored malformed annotations: x',
        },
      }),
    ]);
    assert.deepEqual(fixed.actions, [{ type: 'explain', node: 'a', reason: 'no reboot needed' }]);
  });
});

describe('decide: hostile values', () => {
  test('a grant nuo did not give is removed, and holds its node back until it is', () => {
    const forged = { [Annotations.rebootOk]: 'true' };
    const idle = run([node('a', { annotations: forged })]);
    assert.deepEqual(idle.actions, [
      {
        type: 'revoke',
        node: 'a',
        reason: 'removed nuo.dev/reboot-ok="true": nuo gave no grant (phase none)',
      },
    ]);
    const waiting = run([node('a', { annotations: { ...forged, ...needs, ...state(Phase.pending, 10) } })]);
    assert.deepEqual(ofType(waiting.actions, 'revoke'), ['a']);
    assert.deepEqual(ofType(waiting.actions, 'admit'), [], 'not admitted while it carries a foreign grant');
    const slot = { ledger: { slots: { a: { since: ago(100) } } }, draining: ['a'] };
    for (const phase of [Phase.beforeReboot, Phase.draining, Phase.afterReboot]) {
      const d = run([node('a', { annotations: { ...forged, ...needs, ...state(phase, 10) } })], slot);
      assert.deepEqual(
        ofType(d.actions, 'revoke'),
        ['a'],
        `${phase}: nuo has given no grant yet, or took it back`,
      );
    }
    for (const phase of [Phase.rebootGranted, Phase.rebooting, Phase.failed]) {
      const d = run([node('a', { annotations: { ...forged, ...needs, ...state(phase, 10) } })], slot);
      assert.deepEqual(ofType(d.actions, 'revoke'), [], `${phase}: the grant is nuo's to withdraw`);
    }
    // With the operator's key at hand, a grant over nuo's own in RebootGranted that nuo did not sign goes.
    const granted = {
      annotations: { ...forged, ...needs, ...state(Phase.rebootGranted, 10) },
      unschedulable: true,
    };
    const checked = (own: boolean) => {
      const snapshot = { ...slot, ownGrant: () => own };
      return run([node('a', granted)], snapshot);
    };
    assert.deepEqual(ofType(checked(false).actions, 'revoke'), ['a'], 'not signed by nuo: removed');
    assert.deepEqual(ofType(checked(true).actions, 'revoke'), [], "nuo's own: kept");
    const huge = run([node('a', { annotations: { [Annotations.rebootOk]: 'x'.repeat(150_000) } })]);
    const reason = (huge.actions[0] as { reason: string }).reason;
    assert.ok(reason.length < 200, `the reason quotes a bounded prefix: ${reason.length} characters`);
    assert.match(reason, /\(150000 characters\)/);
  });

  test('a reboot requested for a later time waits until then, and says so', () => {
    const later = new Date(NOW.getTime() + 3_600_000).toISOString();
    const future = { [Annotations.rebootRequested]: later };
    const before = run([node('a', { annotations: future })]);
    assert.deepEqual(before.actions, [
      { type: 'explain', node: 'a', reason: `reboot requested for ${later}: not before then` },
    ]);
    assert.equal(before.wakeAt, NOW.getTime() + 3_600_000, 'looks again exactly then');
    const said = { ...future, [Annotations.stateReason]: `reboot requested for ${later}: not before then` };
    assert.deepEqual(run([node('a', { annotations: said })]).actions, [], 'said once');
    const year2099 = { [Annotations.rebootRequested]: '2099-01-01T00:00:00Z' };
    assert.deepEqual(ofType(run([node('a', { annotations: year2099 })]).actions, 'admit'), []);
    const then = decide(
      {
        nodes: [viewNode(node('a', { annotations: said }))],
        ledger: { slots: {} },
        draining: new Set(),
        admitting: new Set(),
        health: new Map(),
      },
      config,
      new Date(NOW.getTime() + 3_600_000),
    );
    assert.deepEqual(ofType(then.actions, 'admit'), ['a'], 'due at its time');
    const withdrawn = run([
      node('a', { annotations: { [Annotations.stateReason]: said[Annotations.stateReason] } }),
    ]);
    assert.deepEqual(withdrawn.actions, [{ type: 'explain', node: 'a', reason: 'no reboot needed' }]);
  });

  test("nuo's own keys overwritten with values it never writes are written afresh", () => {
    const hostile: Array<Record<string, string>> = [
      { [Annotations.state]: 'Garbage' },
      { ...state(Phase.idle, 10), [Annotations.failures]: 'abc' },
      { [Annotations.state]: Phase.idle, [Annotations.stateSince]: 'yesterday' },
    ];
    for (const own of hostile) {
      const d = run([node('a', { annotations: own })]);
      assert.deepEqual(
        d.actions.map((a) => [a.type, (a as { to?: string }).to]),
        [['transition', Phase.idle]],
        JSON.stringify(own),
      );
    }
  });
});

describe('decide: the reboot-pending taint', () => {
  const pendingTaint = { key: Taints.rebootPending, effect: 'PreferNoSchedule' };
  const admins = { key: 'dedicated', value: 'db', effect: 'NoSchedule' };
  const busy = { b: { since: ago(5) } };
  const holder = node('b', { annotations: state(Phase.draining, 5) });
  const taintOf = (actions: Action[], name: string) => {
    const a = actions.find((x) => x.node === name);
    if (!a) return 'no write';
    if (a.type === 'taint') return a.count;
    return 'taint' in a ? (a.taint ?? 'unchanged') : 'unchanged';
  };
  test('is on every node that waits for a reboot, on no other node outside an attempt', () => {
    const table: Array<[string, NodeOpts, ReturnType<typeof taintOf>]> = [
      ['needs a reboot, no slot free: Pending and tainted in one write', { annotations: needs }, 1],
      [
        'waits in Pending with its reason written, untainted (an operator upgraded, an admin removed it)',
        {
          annotations: {
            ...needs,
            ...state(Phase.pending, 10, {
              [Annotations.stateReason]: 'waiting for a free slot (maxUnavailable 1)',
            }),
          },
        },
        1,
      ],
      [
        'waits tainted: nothing to write',
        {
          annotations: {
            ...needs,
            ...state(Phase.pending, 10, {
              [Annotations.stateReason]: 'waiting for a free slot (maxUnavailable 1)',
            }),
          },
          taints: [admins, pendingTaint],
        },
        'no write',
      ],
      [
        'no longer needs a reboot: back to Idle without the taint, in one write',
        { annotations: state(Phase.pending, 10), taints: [pendingTaint] },
        0,
      ],
      [
        'Idle and tainted (the need withdrawn long ago): the taint goes',
        { taints: [pendingTaint, admins] },
        0,
      ],
      ['Idle, untainted: nothing', {}, 'no write'],
      [
        'paused: leave it alone, and pods may land on it',
        { annotations: { ...needs, [Annotations.paused]: 'true' }, taints: [pendingTaint] },
        0,
      ],
    ];
    for (const [what, opts, want] of table) {
      const d = run([holder, node('a', opts)], {
        ledger: { slots: busy },
        draining: ['b'],
        cfg: { pendingTaint: true },
      });
      assert.equal(taintOf(d.actions, 'a'), want, what);
    }
  });
  test('a node admitted or in an attempt is not written for its taint; off means none anywhere', () => {
    const admitted = run([node('a', { annotations: needs })], { cfg: { pendingTaint: true } });
    assert.deepEqual(admitted.actions, [
      { type: 'admit', node: 'a', reason: 'reboot needed', for: 'Reboot' },
    ]);
    const inAttempt = run([node('b', { annotations: state(Phase.draining, 5), taints: [pendingTaint] })], {
      ledger: { slots: busy },
      draining: ['b'],
      cfg: { pendingTaint: true },
    });
    assert.deepEqual(inAttempt.actions, []);
    const off = run([holder, node('a', { annotations: needs, taints: [pendingTaint] })], {
      ledger: { slots: busy },
      draining: ['b'],
    });
    assert.equal(taintOf(off.actions, 'a'), 0, 'turned off: nuo removes the taints it set');
  });
  test('a node outside every pool loses the taint; one without it, or in a pool, is not written', () => {
    const tainted = viewNode(node('a', { annotations: needs, taints: [pendingTaint] }));
    const clean = viewNode(node('c', { annotations: needs }));
    const pooled = viewNode(node('p', { annotations: needs, taints: [pendingTaint] }));
    const unmatched = { unmatched: ['a', 'c'], conflicts: new Map<string, string[]>() };
    assert.deepEqual(unmanagedWrites([tainted, clean, pooled], unmatched), [
      { type: 'taint', node: 'a', count: 0 },
    ]);
  });
  test('a node outside every pool says why instead of its last attempt’s reason, in one write with the taint', () => {
    const done = { [Annotations.state]: Phase.idle, [Annotations.stateReason]: 'rebooted and healthy' };
    const both = ['blue', 'green'];
    const conflict = unmanagedReason(both);
    const table: Array<[string, NodeOpts, 'conflict' | 'unmatched', unknown[]]> = [
      [
        'claimed by two policies, stale reason: the conflict named',
        { annotations: done },
        'conflict',
        [{ type: 'explain', node: 'n', reason: conflict }],
      ],
      [
        'claimed by two, tainted: the reason and the taint in one write',
        { annotations: done, taints: [pendingTaint] },
        'conflict',
        [{ type: 'explain', node: 'n', reason: conflict, taint: 0 }],
      ],
      [
        'claimed by two, never explained: the conflict named',
        {},
        'conflict',
        [{ type: 'explain', node: 'n', reason: conflict }],
      ],
      [
        'claimed by two, reason already current: nothing',
        { annotations: { ...done, [Annotations.stateReason]: conflict } },
        'conflict',
        [],
      ],
      [
        'selected by none, stale reason: said so',
        { annotations: done },
        'unmatched',
        [{ type: 'explain', node: 'n', reason: unmanagedReason(undefined) }],
      ],
      ['selected by none, never explained: no annotation written', {}, 'unmatched', []],
      [
        'in an attempt: its steps keep the reason',
        { annotations: { ...done, [Annotations.state]: Phase.draining } },
        'conflict',
        [],
      ],
    ];
    for (const [name, opts, kind, want] of table) {
      const plan =
        kind === 'conflict'
          ? { unmatched: [], conflicts: new Map([['n', both]]) }
          : { unmatched: ['n'], conflicts: new Map<string, string[]>() };
      assert.deepEqual(unmanagedWrites([viewNode(node('n', opts))], plan), want, name);
    }
  });
  test('a waiting node carries one taint more than any node carries soft taints of others, its own counted', () => {
    const soft = (key: string) => ({ key, effect: 'PreferNoSchedule' });
    const waiting = { annotations: needs };
    const table: Array<[string, NodeOpts, NodeOpts, number]> = [
      ['no soft taint anywhere: one', waiting, {}, 1],
      ['a NoSchedule taint elsewhere does not count: one', waiting, { taints: [admins] }, 1],
      ['another node carries two soft taints: three', waiting, { taints: [soft('x'), soft('y')] }, 3],
      [
        'its own soft taint counts towards the three',
        { ...waiting, taints: [soft('x')] },
        { taints: [soft('x'), soft('y')] },
        2,
      ],
      [
        "already carrying two of nuo's, with nothing else soft anywhere: back to one",
        { ...waiting, taints: [pendingTaint, soft(`${Taints.rebootPendingMore}2`)] },
        {},
        1,
      ],
    ];
    for (const [what, waits, other, want] of table) {
      const nodes = [holder, node('a', waits), node('c', other)];
      const d = run(nodes, {
        ledger: { slots: busy },
        draining: ['b'],
        cfg: { pendingTaint: true, softTaintsMost: softTaintsMost(nodes.map(viewNode)) },
      });
      assert.equal(taintOf(d.actions, 'a'), want, what);
    }
  });
  test('evicted pods can land for good on a Ready, schedulable node in no attempt that waits for no drain', () => {
    const t = NOW.getTime();
    const table: Array<[string, NodeOpts, boolean]> = [
      ['needs nothing', {}, true],
      ['waits for a reboot', { annotations: needs }, false],
      [
        'paused, though it needs a reboot: untainted, pods go there',
        { annotations: { ...needs, [Annotations.paused]: 'true' } },
        true,
      ],
      ['in an attempt', { annotations: state(Phase.afterReboot, 5) }, false],
      ['cordoned', { unschedulable: true }, false],
      ['not Ready', { ready: false }, false],
    ];
    for (const [what, opts, want] of table) {
      assert.equal(landingExists([viewNode(node('n', opts))], t), want, what);
      assert.equal(
        landingExists([viewNode(node('w', { annotations: needs })), viewNode(node('n', opts))], t),
        want,
        `beside a waiting node: ${what}`,
      );
    }
  });
  test('withPendingTaints keeps every other taint as it was', () => {
    const second = { key: 'nuo.dev/reboot-pending-2', effect: 'PreferNoSchedule' };
    assert.deepEqual(withPendingTaints([admins], 1), [admins, pendingTaint]);
    assert.deepEqual(withPendingTaints([pendingTaint, admins], 1), [admins, pendingTaint]);
    assert.deepEqual(withPendingTaints([pendingTaint, admins], 2), [admins, pendingTaint, second]);
    assert.deepEqual(withPendingTaints([second, pendingTaint, admins], 0), [admins]);
    assert.deepEqual(withPendingTaints([], 0), []);
  });
  test("nuo's taints are its key and that key with -2, -3, …, nothing else", () => {
    for (const key of ['nuo.dev/reboot-pending', 'nuo.dev/reboot-pending-2', 'nuo.dev/reboot-pending-12'])
      assert.equal(isPendingTaint(key), true, key);
    for (const key of [
      'nuo.dev/reboot-pending-',
      'nuo.dev/reboot-pending-0',
      'nuo.dev/reboot-pending-x',
      'example.com/reboot-pending',
    ])
      assert.equal(isPendingTaint(key), false, key);
  });
});

describe('decide: phases', () => {
  const holder = (name: string, annotations: Record<string, string>, o: NodeOpts = {}) =>
    node(name, { ...o, annotations });
  const ledger = (name: string, since = 600) => ({ slots: { [name]: { since: ago(since), attempt: 7 } } });
  /** The node names the attempt its slot holds: its admission's write landed. */
  const inIt = { [Annotations.attempt]: '7' };

  test('BeforeReboot waits for every hook annotation, then drains; hooks that never finish abort', () => {
    const cfg = { beforeRebootAnnotations: ['hook.example/a', 'hook.example/b'] };
    const waiting = run([holder('a', { ...state(Phase.beforeReboot, 5), 'hook.example/a': 'true' })], {
      ledger: ledger('a'),
      cfg,
    });
    assert.deepEqual(waiting.actions, [
      { type: 'explain', node: 'a', reason: 'waiting for before-reboot hooks: hook.example/b' },
    ]);
    const done = run(
      [holder('a', { ...state(Phase.beforeReboot, 5), 'hook.example/a': 'true', 'hook.example/b': 'true' })],
      { ledger: ledger('a'), cfg },
    );
    assert.equal(done.actions[0]?.type === 'transition' && done.actions[0].to, Phase.draining);
    const late = run([holder('a', state(Phase.beforeReboot, 601))], { ledger: ledger('a'), cfg });
    assert.deepEqual(ofType(late.actions, 'abort'), ['a']);
  });

  test('Draining starts a drain only when none is running here', () => {
    assert.deepEqual(
      ofType(run([holder('a', state(Phase.draining, 5))], { ledger: ledger('a') }).actions, 'drain'),
      ['a'],
    );
    assert.deepEqual(
      run([holder('a', state(Phase.draining, 5))], { ledger: ledger('a'), draining: ['a'] }).actions,
      [],
    );
  });

  test('a reboot is confirmed only by a changed boot ID', () => {
    const inProgress = { [Annotations.rebootInProgress]: 'true', [Annotations.bootIdBefore]: 'boot-1' };
    const started = run([holder('a', { ...state(Phase.rebootGranted, 5), ...inProgress })], {
      ledger: ledger('a'),
    });
    assert.equal(started.actions[0]?.type === 'transition' && started.actions[0].to, Phase.rebooting);
    const sameBoot = run([holder('a', { ...state(Phase.rebooting, 5), ...inProgress }, { ready: true })], {
      ledger: ledger('a'),
    });
    assert.deepEqual(sameBoot.actions, [], 'Ready but the same boot: not rebooted');
    const back = run([holder('a', { ...state(Phase.rebooting, 5), ...inProgress }, { bootId: 'boot-2' })], {
      ledger: ledger('a'),
    });
    assert.deepEqual(back.actions[0], {
      type: 'transition',
      node: 'a',
      to: Phase.afterReboot,
      reason: 'rebooted: boot ID changed',
      clearGrant: true,
    });
  });

  test('no reboot within the timeout fails closed: Failed, slot kept', () => {
    const granted = { ...state(Phase.rebootGranted, 601), [Annotations.rebootOk]: 'v1.a.b' };
    const neverStarted = run([holder('a', granted, { unschedulable: true })], {
      ledger: ledger('a'),
    });
    assert.equal(neverStarted.actions[0]?.type === 'transition' && neverStarted.actions[0].to, Phase.failed);
    const neverBack = run(
      [
        holder('a', {
          ...state(Phase.rebooting, 601),
          [Annotations.bootIdBefore]: 'boot-1',
          [Annotations.rebootInProgress]: 'true',
        }),
      ],
      { ledger: ledger('a') },
    );
    assert.equal(neverBack.actions[0]?.type === 'transition' && neverBack.actions[0].to, Phase.failed);
    const failed = run(
      [
        holder('a', state(Phase.failed, 5)),
        node('b', { annotations: { ...needs, ...state(Phase.pending, 10) } }),
      ],
      { ledger: ledger('a') },
    );
    assert.deepEqual(ofType(failed.actions, 'admit'), [], 'the Failed node keeps its slot; others wait');
    assert.deepEqual(ofType(failed.actions, 'release'), []);
  });

  test('the health gate waits for Ready, soak, DaemonSet pods, hooks and the agent', () => {
    const base = { ...state(Phase.afterReboot, 100), [Annotations.bootIdBefore]: 'boot-1' };
    const fresh = { bootId: 'boot-2', readySince: ago(10) };
    const soaking = run([holder('a', base, fresh)], { ledger: ledger('a'), healthy: ['a'] });
    assert.match((soaking.actions[0] as { reason: string }).reason, /^health gate: waiting for soak/);
    // DaemonSet pods are read only after the soak: meanwhile the soak alone is what it waits for.
    const unread = run([holder('a', base, fresh)], { ledger: ledger('a') });
    assert.match(
      (unread.actions[0] as { reason: string }).reason,
      /^health gate: waiting for soak \(of 30s\)$/,
    );
    assert.equal(healthDue(viewNode(holder('a', base, fresh)), config, NOW), false);
    assert.equal(
      healthDue(viewNode(holder('a', base, { bootId: 'boot-2', readySince: ago(60) })), config, NOW),
      true,
    );
    const healthy = { bootId: 'boot-2', readySince: ago(60) };
    // Pods not read yet: nothing is written while they are read (most nodes pass: the next write is
    // the completion), unless something else is waited for too.
    const noDs = run([holder('a', base, healthy)], { ledger: ledger('a') });
    assert.deepEqual(noDs.actions, []);
    const noDsAndAgent = run([holder('a', { ...base, [Annotations.rebootInProgress]: 'true' }, healthy)], {
      ledger: ledger('a'),
    });
    assert.match(
      (noDsAndAgent.actions[0] as { reason: string }).reason,
      /DaemonSet pods: not checked yet; the agent to report after boot/,
    );
    const agent = run([holder('a', { ...base, [Annotations.rebootInProgress]: 'true' }, healthy)], {
      ledger: ledger('a'),
      healthy: ['a'],
    });
    assert.match((agent.actions[0] as { reason: string }).reason, /the agent to report after boot/);
    const hooks = run([holder('a', base, healthy)], {
      ledger: ledger('a'),
      healthy: ['a'],
      cfg: { afterRebootAnnotations: ['hook.example/ok'] },
    });
    assert.match((hooks.actions[0] as { reason: string }).reason, /after-reboot hooks: hook.example\/ok/);
    const done = run([holder('a', base, healthy)], { ledger: ledger('a'), healthy: ['a'] });
    assert.deepEqual(done.actions, [{ type: 'complete', node: 'a', reason: 'rebooted and healthy' }]);
    const notReady = run(
      [
        holder(
          'a',
          { ...state(Phase.afterReboot, 601), [Annotations.bootIdBefore]: 'boot-1' },
          { bootId: 'boot-2', ready: false },
        ),
      ],
      { ledger: ledger('a') },
    );
    assert.equal(notReady.actions[0]?.type === 'transition' && notReady.actions[0].to, Phase.failed);
  });

  test('DaemonSet pods are read from shortly before the soak ends; a healthy reading is not renewed before it', () => {
    const base = { ...state(Phase.afterReboot, 100), [Annotations.bootIdBefore]: 'boot-1' };
    const soak = config.soakMs / 1000;
    const lead = HEALTH_LEAD_MS / 1000;
    const table: Array<[string, Record<string, string>, NodeOpts, boolean]> = [
      [
        'soaking, its end further than the lead',
        base,
        { bootId: 'boot-2', readySince: ago(soak - lead - 1) },
        false,
      ],
      [
        'soaking, its end within the lead',
        base,
        { bootId: 'boot-2', readySince: ago(soak - lead + 0.5) },
        true,
      ],
      ['soaked', base, { bootId: 'boot-2', readySince: ago(soak + 5) }, true],
      ['NotReady', base, { bootId: 'boot-2', ready: false }, false],
      ['still rebooting', state(Phase.rebooting, 5), { readySince: ago(soak + 5) }, false],
    ];
    for (const [name, annotations, o, want] of table) {
      assert.equal(healthGated(viewNode(holder('a', annotations, o)), config, NOW), want, name);
    }
    // A reading that found pods not ready before the soak's end adds no wait (nor a write) until then.
    const early = { bootId: 'boot-2', readySince: ago(soak - 1) };
    const unhealthy = decide(
      {
        nodes: [viewNode(holder('a', base, early))],
        ledger: ledger('a'),
        draining: new Set(),
        admitting: new Set(),
        health: new Map([['a', { daemonSetPodsReady: false, detail: '0/1 ready' }]]),
      },
      config,
      NOW,
    );
    assert.match(
      (unhealthy.actions[0] as { reason: string }).reason,
      /^health gate: waiting for soak \(of 30s\)$/,
    );
    const rereads: Array<[boolean, number, boolean]> = [
      [false, HEALTH_REREAD_MS - 1, false],
      [false, HEALTH_REREAD_MS, true],
      [true, HEALTH_REREAD_MS, false],
      [true, HEALTH_LEAD_MS + HEALTH_REREAD_MS - 1, false],
      [true, HEALTH_LEAD_MS + HEALTH_REREAD_MS, true],
    ];
    for (const [healthy, ageMs, want] of rereads) {
      assert.equal(healthRereadDue({ healthy, ageMs }), want, `healthy ${healthy}, ${ageMs} ms old`);
    }
  });

  test('a paused slot holder keeps its slot and is left alone', () => {
    const d = run([holder('a', { ...state(Phase.draining, 5), [Annotations.paused]: 'true' })], {
      ledger: ledger('a'),
    });
    assert.deepEqual(d.actions, [
      { type: 'explain', node: 'a', reason: 'paused: holds its slot, no further action' },
    ]);
  });

  test("a holder's phase overwritten by another client: the slot is kept, the phase restored from what its keys prove", () => {
    const garbage = { [Annotations.state]: 'Garbage', [Annotations.stateSince]: ago(1) };
    const marked = { [Annotations.rebootInProgress]: 'true', [Annotations.bootIdBefore]: 'boot-1' };
    const cordoned = { [Annotations.cordonedByNuo]: 'true' };
    const cases: Array<[string, Record<string, string>, string, string]> = [
      ['admitted, nothing done yet', {}, 'boot-1', 'end'],
      ['draining, or back with the mark cleared: never drained and granted again', cordoned, 'boot-1', 'end'],
      ['granted', { ...cordoned, [Annotations.rebootOk]: 'v1.a.b' }, 'boot-1', Phase.rebootGranted],
      ['rebooting', { ...cordoned, [Annotations.rebootOk]: 'v1.a.b', ...marked }, 'boot-1', Phase.rebooting],
      ['back', { ...cordoned, [Annotations.rebootOk]: 'v1.a.b', ...marked }, 'boot-2', Phase.afterReboot],
    ];
    for (const [what, keys, bootId, want] of cases) {
      const d = run(
        [node('a', { annotations: { ...needs, ...garbage, ...keys }, bootId, unschedulable: true })],
        {
          ledger: ledger('a', 60),
        },
      );
      assert.deepEqual(ofType(d.actions, 'release'), [], `${what}: slot kept`);
      const step = d.actions.find((a) => a.type === 'transition' || a.type === 'end');
      assert.equal(step?.type === 'transition' ? step.to : step?.type, want, what);
      assert.match((step as { reason?: string })?.reason ?? '', /phase restored from the node's other keys/);
    }
  });

  test('a phase of an attempt without a slot ends, its cordon undone: Pending while the need remains, else Idle', () => {
    const drainingNoSlot = (extra: Record<string, string>) =>
      node('x', {
        unschedulable: true,
        annotations: { ...state(Phase.draining, 5), [Annotations.cordonedByNuo]: 'true', ...extra },
      });
    const idle = run([drainingNoSlot({})]);
    assert.deepEqual(
      idle.actions.filter((a) => a.type === 'end').map((a) => a.type === 'end' && a.to),
      [Phase.idle],
    );
    const pending = run([drainingNoSlot(needs)]);
    assert.deepEqual(
      pending.actions.filter((a) => a.type === 'end').map((a) => a.type === 'end' && a.to),
      [Phase.pending],
    );
    const manualDrain = run([
      node('x', {
        unschedulable: true,
        annotations: { ...state(Phase.idle, 5), [Annotations.cordonedByNuo]: 'true' },
      }),
    ]);
    assert.deepEqual(
      manualDrain.actions,
      [],
      '`nuo drain` by hand on an Idle node: its cordon is left to the person',
    );
  });

  test('ledger entries with nothing behind them are released; an admission in flight is kept', () => {
    const gone = run([], { ledger: ledger('ghost') });
    assert.deepEqual(ofType(gone.actions, 'release'), ['ghost']);
    const idle = run([holder('a', { ...state(Phase.idle, 5), ...inIt })], { ledger: ledger('a') });
    assert.deepEqual(ofType(idle.actions, 'release'), ['a']);
    const aborted = run([holder('a', { ...needs, ...state(Phase.pending, 5), ...inIt })], {
      ledger: ledger('a', 60),
    });
    assert.deepEqual(ofType(aborted.actions, 'release'), ['a'], 'Pending, naming its attempt: aborted');
    const admitting = run(
      [holder('a', { ...needs, ...state(Phase.pending, 60), [Annotations.attempt]: '6' })],
      {
        ledger: ledger('a', 5),
      },
    );
    assert.deepEqual(ofType(admitting.actions, 'release'), []);
    assert.equal(admitting.actions[0]?.type === 'transition' && admitting.actions[0].to, Phase.beforeReboot);
    // Admitted straight from Idle (or never written): kept and redone while the need lasts.
    for (const annotations of [{ ...needs, ...state(Phase.idle, 60) }, needs]) {
      const fromIdle = run([holder('a', annotations)], { ledger: ledger('a', 5) });
      assert.deepEqual(ofType(fromIdle.actions, 'release'), [], JSON.stringify(annotations));
      assert.equal(fromIdle.actions[0]?.type === 'transition' && fromIdle.actions[0].to, Phase.beforeReboot);
    }
    const needless = run([holder('a', state(Phase.idle, 60))], { ledger: ledger('a', 5) });
    assert.deepEqual(needless.actions, [
      { type: 'release', node: 'a', reason: 'admitted, but no longer needs a reboot or a Plan' },
    ]);
  });

  test('malformed annotations become problems, never exceptions', () => {
    const v = viewNode(
      node('a', {
        annotations: {
          [Annotations.rebootNeeded]: 'maybe',
          [Annotations.state]: 'Exploding',
          [Annotations.failures]: 'many',
          [Annotations.stateSince]: 'yesterday',
        },
      }),
    );
    assert.equal(v.rebootNeeded, false);
    assert.equal(v.state, undefined);
    assert.equal(v.failures, 0);
    assert.equal(v.problems.length, 4);
    assert.doesNotThrow(() => run([node('a', { annotations: v.annotations })]));
  });
});

describe('decide: a slot about to be freed is promised to the next node in line', () => {
  const soaking = (name: string) =>
    node(name, {
      annotations: { ...state(Phase.afterReboot, 20), [Annotations.bootIdBefore]: 'boot-1' },
      bootId: 'boot-2',
      readySince: ago(5),
    });
  const waiting = (name: string, since: number, extra: Record<string, string> = {}) =>
    node(name, { annotations: { ...needs, ...state(Phase.pending, since), ...extra } });
  const slotA = { a: { since: ago(100), attempt: 1 } };
  const promiseB = { b: { after: 'a', since: ago(10), attempt: 2 } };
  const done = node('a', {
    annotations: { ...state(Phase.idle, 1), [Annotations.attempt]: '1' },
    bootId: 'boot-2',
  });

  test('a holder soaking after its reboot is promised the longest-waiting Pending node', () => {
    const d = run([soaking('a'), waiting('c', 30), waiting('b', 60), node('i', { annotations: needs })], {
      ledger: { slots: slotA },
    });
    assert.deepEqual(
      d.actions.filter((a) => a.type === 'promise'),
      [{ type: 'promise', node: 'b', after: 'a' }],
    );
    assert.deepEqual(ofType(d.actions, 'admit'), []);
    const spaced = run([soaking('a'), waiting('b', 60)], {
      ledger: { slots: slotA },
      cfg: { minGrantSpacingMs: 60_000 },
    });
    assert.deepEqual(ofType(spaced.actions, 'promise'), [], 'no promise while grants are spaced');
  });

  test('a promised node waits off the waiting list, and counts against nothing, until the slot is freed', () => {
    const d = run([soaking('a'), waiting('b', 60)], { ledger: { slots: slotA, next: promiseB } });
    assert.deepEqual(
      d.actions.filter((a) => a.node === 'b'),
      [],
    );
    assert.deepEqual(d.budget.holders, ['a']);
    assert.equal(d.budget.used, 1);
  });

  test('once the holder is done, the promised node takes its slot before any older waiting node', () => {
    const d = run([done, waiting('c', 900), waiting('b', 60)], { ledger: { slots: slotA, next: promiseB } });
    assert.deepEqual(ofType(d.actions, 'release'), ['a']);
    assert.deepEqual(ofType(d.actions, 'admit'), ['b']);
  });

  test('a withdrawn promise keeps the freed slot from anyone else for that pass', () => {
    for (const [what, b] of [
      ['paused', waiting('b', 60, { [Annotations.paused]: 'true' })],
      ['no longer needs a reboot', node('b', { annotations: state(Phase.pending, 60) })],
      ['NotReady', node('b', { annotations: { ...needs, ...state(Phase.pending, 60) }, ready: false })],
    ] as const) {
      const d = run([done, waiting('c', 900), b], { ledger: { slots: slotA, next: promiseB } });
      assert.deepEqual(ofType(d.actions, 'unpromise'), ['b'], what);
      assert.deepEqual(ofType(d.actions, 'admit'), [], `${what}: c waits one more pass`);
    }
    const gone = run([done, waiting('c', 900)], { ledger: { slots: slotA, next: promiseB } });
    assert.deepEqual(ofType(gone.actions, 'unpromise'), ['b']);
    assert.deepEqual(ofType(gone.actions, 'admit'), []);
    const next = run([done, waiting('c', 900)], { ledger: { slots: {} } });
    assert.deepEqual(ofType(next.actions, 'admit'), ['c'], 'and has it the pass after');
  });

  test('a promised node already draining (handed the slot at once) claims it, and counts', () => {
    const b = node('b', { annotations: { ...needs, ...state(Phase.draining, 2) }, unschedulable: true });
    const d = run([done, waiting('c', 900), b], {
      ledger: { slots: slotA, next: promiseB },
      draining: ['b'],
    });
    assert.deepEqual(
      d.actions.filter((a) => a.type === 'claim'),
      [{ type: 'claim', node: 'b', since: ago(10), attempt: 2 }],
    );
    assert.deepEqual(ofType(d.actions, 'admit'), [], 'b holds the only slot');
    assert.deepEqual(d.budget.holders.sort(), ['b']);
    // Even with its predecessor's attempt still on record (a stale copy): b is disrupted, so it counts.
    const stale = run([soaking('a'), b], { ledger: { slots: slotA, next: promiseB }, draining: ['b'] });
    assert.deepEqual(stale.budget.holders.sort(), ['a', 'b']);
  });
});

describe('decide: coincident completions never give one slot twice', () => {
  // Two holders end their attempts at once and each hands its slot to the node promised it (the
  // handover (attempt-writes.ts) runs decide() on its cache, one completion after the other). A holder that
  // stays unavailable after its attempt (an admin's cordon, NotReady) frees no capacity, and the first
  // handover's admission may still be in flight when the second decides.
  const after = {
    available: {},
    'admin-cordoned': { unschedulable: true },
    NotReady: { ready: false },
  } as const;
  type After = keyof typeof after;
  const ended = (name: string, how: After) =>
    node(name, { annotations: state(Phase.idle, 0), bootId: 'boot-2', ...after[how] });
  const soaking = (name: string, how: After) =>
    node(name, {
      annotations: { ...state(Phase.afterReboot, 20), [Annotations.bootIdBefore]: 'boot-1' },
      bootId: 'boot-2',
      readySince: ago(5),
      ...(how === 'admin-cordoned' ? { unschedulable: true } : {}),
    });
  const waiting = (name: string, since: number) =>
    node(name, { annotations: { ...needs, ...state(Phase.pending, since) } });
  const draining = (name: string) =>
    node(name, { annotations: { ...needs, ...state(Phase.draining, 0) }, unschedulable: true });
  const ledger: Ledger = {
    slots: { a: { since: ago(100) }, b: { since: ago(100) } },
    next: { c: { after: 'a', since: ago(10) }, d: { after: 'b', since: ago(10) } },
  };
  const cfg = { maxUnavailable: parseMaxUnavailable('2') };
  const hows = Object.keys(after) as After[];

  test('for every mix of holders that stay unavailable, either order, the first admission landed or in flight', () => {
    for (const aAfter of hows)
      for (const bAfter of hows)
        for (const first of ['a', 'b'] as const)
          for (const landed of [false, true]) {
            const second = first === 'a' ? 'b' : 'a';
            const how = { a: aAfter, b: bAfter };
            const successorOf = { a: 'c', b: 'd' } as const;
            const label = `a ${aAfter}, b ${bAfter}, ${first} first, first admission ${landed ? 'landed' : 'in flight'}`;
            // The first completion: its node is ended, the other still soaks.
            const one = run(
              [ended(first, how[first]), soaking(second, how[second]), waiting('c', 60), waiting('d', 50)],
              {
                ledger,
                cfg,
              },
            );
            const firstAdmits = ofType(one.actions, 'admit').filter((n) => n === successorOf[first]);
            // The second: both ended; the first handover's node in flight, or drained in its attempt.
            const c = firstAdmits.includes('c') && landed ? draining('c') : waiting('c', 60);
            const d = firstAdmits.includes('d') && landed ? draining('d') : waiting('d', 50);
            const two = run([ended('a', aAfter), ended('b', bAfter), c, d], {
              ledger,
              cfg,
              admitting: landed ? [] : firstAdmits,
              draining: landed ? firstAdmits : [],
            });
            // Whatever the second decision admits (its handover's node, or any node the pass after it takes).
            const secondAdmits = ofType(two.actions, 'admit');
            const disrupted = new Set([
              ...(['a', 'b'] as const).filter((n) => how[n] !== 'available'),
              ...firstAdmits,
              ...secondAdmits,
            ]);
            assert.ok(disrupted.size <= 2, `${label}: ${[...disrupted].join(', ')} disrupted at once`);
            // And a slot that was truly freed is given: nothing stalls.
            const freed = 2 - (['a', 'b'] as const).filter((n) => how[n] !== 'available').length;
            assert.equal(
              firstAdmits.length + secondAdmits.length,
              freed,
              `${label}: every freed slot refilled`,
            );
          }
  });

  test('an admission in flight counts, is not admitted again, and keeps its promise', () => {
    const d = run(
      [ended('a', 'admin-cordoned'), ended('b', 'available'), waiting('c', 60), waiting('d', 50)],
      {
        ledger,
        cfg,
        admitting: ['d'],
      },
    );
    assert.deepEqual(d.budget.admitting, ['d']);
    assert.equal(d.budget.used, 2, 'a (cordoned) and d (in flight)');
    assert.deepEqual(ofType(d.actions, 'admit'), []);
    assert.deepEqual(
      d.actions.filter((x) => x.node === 'd'),
      [],
      'no unpromise, no Pending write for d',
    );
  });
});

describe('decide: the budget is never exceeded (randomised)', () => {
  test('for 2,000 random clusters (promises among them), disrupted nodes never exceed the slots after admission', () => {
    let seed = 42;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const phases = PHASES;
    for (let i = 0; i < 2000; i++) {
      const count = 1 + Math.floor(rand() * 12);
      const max = rand() < 0.5 ? String(1 + Math.floor(rand() * 4)) : `${5 + Math.floor(rand() * 60)}%`;
      const nodes: V1Node[] = [];
      const slots: Ledger['slots'] = {};
      const next: NonNullable<Ledger['next']> = {};
      for (let n = 0; n < count; n++) {
        const phase = phases[Math.floor(rand() * phases.length)] as string;
        const name = `n${n}`;
        nodes.push(
          node(name, {
            ready: rand() > 0.15,
            unschedulable: rand() < 0.1,
            annotations: { ...(rand() < 0.7 ? needs : {}), ...state(phase, Math.floor(rand() * 100)) },
          }),
        );
        if (phase !== Phase.pending && phase !== Phase.idle && rand() < 0.5)
          slots[name] = { since: ago(200) };
        else if (n > 0 && rand() < 0.3) next[name] = { after: `n${Math.floor(rand() * n)}`, since: ago(50) };
      }
      const d = run(nodes, { cfg: { maxUnavailable: parseMaxUnavailable(max) }, ledger: { slots, next } });
      const admitted = ofType(d.actions, 'admit');
      const before = new Set([...d.budget.holders, ...d.budget.unavailable]);
      const after = new Set([...before, ...admitted]);
      if (admitted.length > 0) {
        assert.ok(
          after.size <= d.budget.slots,
          `case ${i}: admitted ${admitted} with ${[...before]} already disrupted, ${d.budget.slots} slots`,
        );
      }
    }
  });
});

describe('decide: wake-up time', () => {
  test('is the earliest moment a soak, timeout or backoff ends', () => {
    const soaking = run(
      [
        node('a', {
          annotations: { ...state(Phase.afterReboot, 100), [Annotations.bootIdBefore]: 'boot-1' },
          bootId: 'boot-2',
          readySince: ago(10),
        }),
      ],
      { ledger: { slots: { a: { since: ago(600) } } }, healthy: ['a'] },
    );
    assert.equal(soaking.wakeAt, NOW.getTime() + 20_000, 'soak of 30 s, Ready for 10 s');
    const backoff = run([
      node('b', { annotations: { ...needs, ...state(Phase.pending, 10), [Annotations.failures]: '1' } }),
    ]);
    assert.equal(backoff.wakeAt, NOW.getTime() + 50_000, 'retry 60 s after entering Pending 10 s ago');
    assert.equal(run([node('c')]).wakeAt, undefined, 'nothing to wait for');
  });
});

describe('node views in the operator cache', () => {
  const node = (patch: Partial<V1Node['status']> = {}, rv = '1'): V1Node => ({
    metadata: {
      name: 'n',
      resourceVersion: rv,
      annotations: { [Annotations.state]: 'Idle' },
      managedFields: [{ manager: 'kubelet', operation: 'Update' }],
    },
    status: {
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          lastHeartbeatTime: new Date(1000),
          lastTransitionTime: new Date(0),
        },
      ],
      images: [{ names: ['registry.example/app:1'], sizeBytes: 1 }],
      nodeInfo: { bootID: 'b1' } as V1NodeSystemInfo,
      ...patch,
    },
  });

  it('a heartbeat (new resourceVersion, new heartbeat time) is the same view', () => {
    const beat = node({}, '2');
    (beat.status?.conditions?.[0] as V1NodeCondition).lastHeartbeatTime = new Date(2000);
    assert.ok(sameView(viewNode(node()), viewNode(beat)));
  });
  it("a heartbeat is news for a node whose agent withdrew its need after a grant: its kubelet's post may end the attempt", () => {
    const withdrawn = (rv: string, heartbeat: number) => {
      const n = node({}, rv);
      (n.status?.conditions?.[0] as V1NodeCondition).lastHeartbeatTime = new Date(heartbeat);
      Object.assign(n.metadata?.annotations ?? {}, {
        [Annotations.state]: Phase.failed,
        [protocolKeys(AgentProtocol.flatcar).rebootNeeded]: 'false',
        [protocolKeys(AgentProtocol.flatcar).rebootInProgress]: 'false',
      });
      return speaking(viewNode(n), AgentProtocol.flatcar);
    };
    assert.ok(!sameView(withdrawn('1', 1000), withdrawn('2', 2000)));
    assert.ok(sameView(withdrawn('1', 1000), withdrawn('2', 1000)));
  });
  it('a new boot ID, readiness or annotation is a different view', () => {
    assert.ok(
      !sameView(viewNode(node()), viewNode(node({ nodeInfo: { bootID: 'b2' } as V1NodeSystemInfo }))),
    );
    const notReady = node();
    (notReady.status?.conditions?.[0] as V1NodeCondition).status = 'False';
    assert.ok(!sameView(viewNode(node()), viewNode(notReady)));
    const pending = node();
    (pending.metadata?.annotations as Record<string, string>)[Annotations.state] = 'Pending';
    assert.ok(!sameView(viewNode(node()), viewNode(pending)));
  });
  it('slimNode drops managedFields and images and keeps what views read', () => {
    const slim = slimNode(node());
    assert.equal(slim.metadata?.managedFields, undefined);
    assert.equal(slim.status?.images, undefined);
    assert.ok(sameView(viewNode(slim), viewNode(node())));
  });
});
