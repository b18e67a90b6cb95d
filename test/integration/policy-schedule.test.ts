/**
 * UpdatePolicies in time, on the real control plane: a cron window opens and closes on its own schedule
 * during a rollout (attempts start only while it is open, one in progress when it closes finishes, the
 * rest wait for the next opening), and `zoneOrder: OneAtATime` finishes a zone before it starts the next.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { ResilientInformer } from '../../src/kube/informer.ts';
import type { Budget } from '../../src/sim/checker.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { operatorUnder, resetNodes, useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 6, zones: 3 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);

interface Attempt {
  /** When the operator admitted the node: the `state-since` of its attempt's first phase. */
  start: number;
  /** When it ended: the `state-since` of Idle again. */
  end?: number;
}

/** Every node's attempts as the operator stamped them, seen on the watch (no phase is missed). */
class AttemptLog {
  readonly attempts = new Map<string, Attempt[]>();
  readonly #informer = new ResilientInformer<V1Node>({
    kubeconfig: cluster.kubeconfig,
    path: '/api/v1/nodes',
    list: (o) => core.listNode(o),
    name: 'attempt-log',
  });

  constructor() {
    this.#informer.onEvent((_type, node, old) => {
      const a = node.metadata?.annotations ?? {};
      const state = a[Annotations.state] ?? Phase.idle;
      const before = old?.metadata?.annotations?.[Annotations.state] ?? Phase.idle;
      const since = Date.parse(a[Annotations.stateSince] ?? '');
      const list = this.attempts.get(node.metadata?.name ?? '') ?? [];
      this.attempts.set(node.metadata?.name ?? '', list);
      const outside = (s: string) => s === Phase.idle || s === Phase.pending;
      if (!outside(state) && outside(before)) list.push({ start: since });
      const last = list.at(-1);
      if (state === Phase.idle && !outside(before) && last && last.end === undefined) last.end = since;
    });
  }

  start = () => this.#informer.start();
  stop = () => this.#informer.stop();

  /** Every attempt, with its node, in the order they started. */
  all(): (Attempt & { node: string })[] {
    return [...this.attempts]
      .flatMap(([node, list]) => list.map((a) => ({ node, ...a })))
      .sort((a, b) => a.start - b.start);
  }

  /** Waits until each of `names` has exactly one attempt, ended. */
  async done(names: readonly string[], timeoutMs: number): Promise<void> {
    await pollUntil(
      `${names.join(', ')} through one attempt each`,
      () => {
        const ok = names.every((n) => {
          const list = this.attempts.get(n) ?? [];
          return list.length === 1 && list[0]?.end !== undefined;
        });
        return ok ? true : undefined;
      },
      { timeoutMs, intervalMs: 250 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}: ${JSON.stringify(this.all())}`);
    });
  }
}

let fleet: Fleet | undefined;
let log: AttemptLog | undefined;
after(() => fleet?.stop());

before(async () => {
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
});

afterEach(async () => {
  await log?.stop();
  await fleet?.stop();
  fleet = undefined;
  await resetNodes(core);
});

async function startFleet(rebootMs: number, budget: Budget[]): Promise<Fleet> {
  fleet = new Fleet(cluster, { rebootMs, budget, agentCheckIntervalMs: 2000 });
  await fleet.start();
  log = new AttemptLog();
  await log.start();
  return fleet;
}

/** Stages an update on `nodes`, waits until each went through one attempt, and checks the rollout. */
async function rollOut(f: Fleet, nodes: string[], timeoutMs: number) {
  f.stageUpdates(nodes);
  await log?.done(nodes, timeoutMs);
  await f.checker.finalCheck();
  assert.deepEqual(f.checker.violations, [], 'the checker saw no violation');
  return log?.all() ?? [];
}

const everyNode = (max: number, zones?: Budget['zones']): Budget => ({
  name: 'every node',
  selects: () => true,
  max,
  ...(zones ? { zones } : {}),
});
const zoneOf = (node: string) => `zone-${String.fromCharCode(97 + (Number(node.split('-')[1]) % 3))}`;
const secondOfMinute = (t: number) => (t % 60_000) / 1000;

describe('UpdatePolicies in time', () => {
  test('a window open 20 s of every minute: attempts start only inside it, one in progress finishes after it closes', async () => {
    const nodes = ['node-0', 'node-1', 'node-2'];
    // Attempts of over 17 s (a 15 s reboot, a 1 s soak) cannot all fit in one 20 s opening.
    const f = await startFleet(15_000, [everyNode(1)]);
    await operatorUnder(f, 'op-a', {
      maxUnavailable: 1,
      windows: { cron: [{ schedule: '* * * * *', duration: '20s', timeZone: 'UTC' }] },
    });
    const attempts = await rollOut(f, nodes, 240_000);
    for (const a of attempts) {
      assert.ok(
        secondOfMinute(a.start) < 20,
        `${a.node} admitted at ${new Date(a.start).toISOString()}, inside an opening`,
      );
    }
    const closes = (a: Attempt) => Math.floor((a.start + 20_000) / 60_000) * 60_000 + 20_000;
    assert.ok(
      attempts.some((a) => a.start < closes(a) && (a.end ?? 0) > closes(a)),
      `an attempt in progress when its window closed went on to its end: ${JSON.stringify(attempts)}`,
    );
    const minutes = new Set(attempts.map((a) => Math.floor(a.start / 60_000)));
    assert.ok(minutes.size >= 2, `the rollout waited for a later opening: ${JSON.stringify(attempts)}`);
  });

  test('zoneOrder OneAtATime: a zone finishes before the next one starts, though the budget allows three', async () => {
    const nodes = ['node-0', 'node-1', 'node-2', 'node-3', 'node-4', 'node-5'];
    const f = await startFleet(1000, [everyNode(3)]);
    await operatorUnder(f, 'op-a', { maxUnavailable: 3, zoneOrder: 'OneAtATime' });
    const attempts = await rollOut(f, nodes, 180_000);
    for (const a of attempts) {
      for (const b of attempts) {
        if (zoneOf(a.node) === zoneOf(b.node)) continue;
        const overlap = a.start < (b.end ?? Number.POSITIVE_INFINITY) && b.start < (a.end ?? 0);
        assert.ok(!overlap, `${a.node} and ${b.node} of two zones overlap: ${JSON.stringify(attempts)}`);
      }
    }
    const inZone = (z: string) => attempts.filter((a) => zoneOf(a.node) === z);
    assert.ok(
      ['zone-a', 'zone-b', 'zone-c'].some((z) => {
        const [x, y] = inZone(z);
        return x && y && x.start < (y.end ?? 0) && y.start < (x.end ?? 0);
      }),
      `a zone's two nodes went at once, as the budget allows: ${JSON.stringify(attempts)}`,
    );
    assert.equal(f.checker.maxDisrupted, 2, 'never more than one zone (two nodes) at a time');
  });
});
