/**
 * Notifications on the real control plane, to real HTTP receivers on this machine: a pool's news in JSON
 * and in Slack's format, with URLs from the Secret nuo-notifications; a receiver that is down at first
 * gets its messages once it is up; a receiver that hangs holds up neither the rollout nor the others; a
 * rollout halted by its failure budget is told.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../../src/api/crd.ts';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import {
  NOTIFICATIONS_SECRET,
  type UpdatePolicy,
  type UpdatePolicySpec,
} from '../../src/api/update-policy.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { operatorUnder, resetNodes, useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 3 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
const REF = { group: API_GROUP, version: API_VERSION, plural: UPDATE_POLICY.plural };
const NODES = ['node-0', 'node-1', 'node-2'];

/** A receiver: every request body it got, parsed; `answer` decides how (or whether) it answers. */
class Receiver {
  readonly bodies: Record<string, unknown>[] = [];
  readonly #server: Server;
  answer: (res: ServerResponse) => void = (res) => res.writeHead(204).end();

  constructor() {
    this.#server = createServer((req: IncomingMessage, res) => {
      let text = '';
      req.on('data', (chunk) => {
        text += chunk;
      });
      req.on('end', () => {
        this.bodies.push(JSON.parse(text) as Record<string, unknown>);
        this.answer(res);
      });
    });
  }

  async listen(port = 0): Promise<number> {
    await new Promise<void>((resolve) => this.#server.listen(port, '127.0.0.1', resolve));
    return (this.#server.address() as AddressInfo).port;
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

let fleet: Fleet | undefined;
const receivers: Receiver[] = [];
after(() => fleet?.stop());

before(async () => {
  await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
});

afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
  for (const r of receivers.splice(0)) await r.close();
  await core.deleteNamespacedSecret({ name: NOTIFICATIONS_SECRET, namespace: 'nuo-system' }).catch(() => {});
  await resetNodes(core);
});

async function secret(urls: Record<string, string>): Promise<void> {
  await core.createNamespacedSecret({
    namespace: 'nuo-system',
    body: { metadata: { name: NOTIFICATIONS_SECRET }, stringData: urls },
  });
}

async function receiver(port?: number): Promise<{ receiver: Receiver; url: string }> {
  const r = new Receiver();
  receivers.push(r);
  return { receiver: r, url: `http://127.0.0.1:${await r.listen(port)}/hook` };
}

async function rollOut(spec: UpdatePolicySpec): Promise<Fleet> {
  fleet = new Fleet(cluster, { rebootMs: 300, budget: 1, agentCheckIntervalMs: 2000 });
  await fleet.start();
  await operatorUnder(fleet, 'op-a', { maxUnavailable: 1, ...spec });
  fleet.stageUpdates();
  await pollUntil(
    'every node rebooted once and Idle',
    async () => {
      const nodes = (await core.listNode()).items;
      const done = nodes.every(
        (n) =>
          n.metadata?.annotations?.[Annotations.state] === Phase.idle &&
          fleet?.checker.rebootsOf(n.metadata?.name ?? '') === 1,
      );
      return done ? true : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 250 },
  );
  return fleet;
}

const readFleetPolicy = async () =>
  (await custom.getClusterCustomObject({ ...REF, name: 'fleet' })) as UpdatePolicy;

const kinds = (r: Receiver) => r.bodies.map((b) => `${b.kind}${b.node ? ` ${b.node}` : ''}`);

describe('notifications', () => {
  test('a rollout is told to a JSON and a Slack receiver: each admission, completion, and its end', async () => {
    const json = await receiver();
    const slack = await receiver();
    await secret({ ops: json.url, chat: slack.url });
    await rollOut({
      notifications: [
        { secretKey: 'ops' },
        { secretKey: 'chat', format: 'Slack', events: ['Completed', 'Finished'] },
      ],
    });
    await pollUntil('the JSON receiver told of the end', () =>
      kinds(json.receiver).includes('Finished') ? true : undefined,
    );
    const told = kinds(json.receiver);
    for (const node of NODES) {
      assert.ok(told.includes(`Admitted ${node}`), `${node} admitted: ${told}`);
      assert.ok(told.includes(`Completed ${node}`), `${node} completed: ${told}`);
      assert.ok(
        told.indexOf(`Admitted ${node}`) < told.indexOf(`Completed ${node}`),
        `in order for ${node}: ${told}`,
      );
    }
    assert.equal(told.at(-1), 'Finished', 'the end comes last');
    const first = json.receiver.bodies[0] ?? {};
    assert.equal(first.source, 'nuo');
    assert.equal(first.policy, 'fleet');
    assert.ok(!Number.isNaN(Date.parse(String(first.time))), 'a time');
    await pollUntil('the Slack receiver told of the end', () =>
      slack.receiver.bodies.some((b) => /UpdatePolicy fleet rollout finished/.test(String(b.text)))
        ? true
        : undefined,
    );
    const texts = slack.receiver.bodies.map((b) => String(b.text));
    assert.equal(texts.filter((t) => / rebooted and healthy: /.test(t)).length, 3, texts.join('\n'));
    assert.ok(
      texts.every((t) => !/admitted/.test(t)),
      `only the kinds it asked for: ${texts.join('\n')}`,
    );
  });

  test('a receiver down at first gets its messages once it is up; one that hangs holds up nothing', async () => {
    // A port nothing listens on yet: the first tries are refused, later ones reach it.
    const probe = await receiver();
    const port = Number(new URL(probe.url).port);
    await probe.receiver.close();
    receivers.splice(receivers.indexOf(probe.receiver), 1);
    const hung = await receiver();
    hung.receiver.answer = () => {}; // never answers
    await secret({ late: `http://127.0.0.1:${port}/hook`, hung: hung.url });
    // Six messages to a receiver that never answers would take minutes of timeouts and retries: the
    // rollout finishes within rollOut's deadline only if nothing waits for them.
    await rollOut({ notifications: [{ secretKey: 'late', events: ['Finished'] }, { secretKey: 'hung' }] });
    assert.ok(hung.receiver.bodies.length >= 1, 'the hung receiver was asked');
    assert.equal(hung.receiver.bodies[0]?.kind, 'Admitted');
    const late = await receiver(port);
    await pollUntil(
      'the late receiver told of the end',
      () => (kinds(late.receiver).includes('Finished') ? true : undefined),
      { timeoutMs: 60_000 },
    );
  });

  test('a pool blocked longer than blockedFor is told once; a missing key is logged, not fatal', async () => {
    const json = await receiver();
    await secret({ ops: json.url });
    fleet = new Fleet(cluster, { rebootMs: 300, budget: 1, agentCheckIntervalMs: 2000 });
    await fleet.start();
    await operatorUnder(fleet, 'op-a', {
      paused: true,
      notifications: [
        { secretKey: 'ops', blockedFor: '2s' },
        { secretKey: 'absent', blockedFor: '2s' },
      ],
    });
    fleet.stageUpdates(['node-0']);
    const blocked = await pollUntil('the receiver told of the block', () =>
      json.receiver.bodies.find((b) => b.kind === 'Blocked'),
    );
    assert.match(String(blocked.message), /UpdatePolicy fleet is paused/);
    // Told once per block: a pass after an edit (its status written for the new generation) repeats nothing.
    const generation = (await readFleetPolicy()).metadata.generation ?? 0;
    await fleet.applyPolicy({
      maxUnavailable: 1,
      paused: true,
      reboot: { soak: '2s' },
      notifications: [
        { secretKey: 'ops', blockedFor: '2s' },
        { secretKey: 'absent', blockedFor: '2s' },
      ],
    });
    let last: UpdatePolicy | undefined;
    await pollUntil('the status of the edited generation', async () => {
      last = await readFleetPolicy();
      return (last.status?.observedGeneration ?? 0) > generation ? true : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}: ${JSON.stringify(last?.status)}`);
    });
    assert.equal(json.receiver.bodies.filter((b) => b.kind === 'Blocked').length, 1, 'told once');
    // The receiver whose key the Secret lacks: tried, given up, said in the log; the operator runs on.
    const log = join(cluster.dir, 'logs', 'operator-op-a.log');
    const gaveUp = await pollUntil(
      'the operator to give up on the missing key',
      () =>
        readFileSync(log, 'utf8')
          .split('\n')
          .find((l) => l.includes('was not delivered after 5 tries')),
      { timeoutMs: 60_000 },
    );
    assert.match(gaveUp, /Secret nuo-system\/nuo-notifications has no key absent/);
    assert.equal(fleet.operator('op-a')?.exitCode, null, 'still running');
  });

  test('a rollout that spends its failure budget is told as Halted', async () => {
    const json = await receiver();
    await secret({ ops: json.url });
    fleet = new Fleet(cluster, { rebootMs: 300, budget: 1, agentCheckIntervalMs: 2000 });
    await fleet.start();
    // A before-reboot hook nobody answers: each attempt is aborted when the drain timeout ends it.
    await operatorUnder(fleet, 'op-a', {
      maxUnavailable: 1,
      drain: { timeout: '1s' },
      reboot: { beforeRebootAnnotations: ['test.nuo.dev/never'] },
      rollout: { failureBudget: { maxFailedAttempts: 1 } },
      notifications: [{ secretKey: 'ops', events: ['Halted'] }],
    });
    fleet.stageUpdates(['node-0']);
    const halted = await pollUntil('the receiver told of the halt', () =>
      json.receiver.bodies.find((b) => b.kind === 'Halted'),
    );
    assert.equal(halted.policy, 'fleet');
    assert.match(
      String(halted.message),
      /halted: 1 failed attempt\(s\) in this rollout reached failureBudget\.maxFailedAttempts 1.*nuo policy resume fleet/,
    );
    assert.deepEqual(kinds(json.receiver), ['Halted'], 'only the kind it asked for');
  });
});
