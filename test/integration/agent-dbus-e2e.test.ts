/**
 * The OS integration end to end, with nothing simulated but the host's services: a StatusUpdate signal
 * from a fake Flatcar update_engine on a real private dbus-daemon is read by a real `nuo agent` process,
 * which publishes the need on its Node of a real local control plane; a real `nuo operator` process
 * cordons, drains and grants; and the agent asks the fake logind on the same bus to Reboot(false).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { CoreV1Api } from '@kubernetes/client-node';
import { Annotations, Labels } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import { kubeconfigCredentials } from '../../src/kube/kubeconfig-credentials.ts';
import { LeanClient, type LeanNode } from '../../src/kube/lean-client.ts';
import { strategicMergePatch } from '../../src/kube/patch.ts';
import { applyPolicy, installPolicyCrd } from '../../src/sim/policies.ts';
import { pollUntil } from '../../src/util/poll.ts';
import { deferrals, usePrivateBus } from '../os/bus.ts';
import { FakeLogind, FakeUpdateEngine } from '../os/fake-services.ts';
import { useCluster } from './support.ts';

const cluster = await useCluster({ nodes: 2 });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });
const bus = await usePrivateBus();

const NUO = fileURLToPath(new URL('../../bin/nuo.js', import.meta.url));
const NEED_REBOOT = 'UPDATE_STATUS_UPDATED_NEED_REBOOT';
/** This machine's boot ID: what the agent (reading /proc) reports as the boot before its reboot. */
const BOOT_ID = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
/**
 * Long on purpose: the agent must learn of the update from the StatusUpdate signal alone. With a short
 * interval its periodic GetStatus would find the staged update too, and the test would pass even if the
 * signal were never received.
 */
const CHECK_INTERVAL = '1h';

/** Starts `nuo <args>` with its stdout and stderr appended to cluster.dir/logs/<logName>.log. */
function startNuo(logName: string, args: string[]): ChildProcess {
  const log = openSync(join(cluster.dir, 'logs', `${logName}.log`), 'a');
  return spawn(process.execPath, [NUO, ...args], { stdio: ['ignore', log, log] });
}

/** SIGTERM, then SIGKILL after 10 s; resolves once the process has exited. */
async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

interface Snapshot {
  resourceVersion: string;
  annotations: Record<string, string>;
  labels: Record<string, string>;
  unschedulable: boolean;
}

/**
 * Every version of one Node, from a watch (which delivers each change, so short-lived phases such as
 * RebootGranted are seen even when the next writer follows within milliseconds).
 */
class NodeHistory {
  readonly name: string;
  readonly snapshots: Snapshot[] = [];
  readonly #client = new LeanClient(kubeconfigCredentials(cluster.kubeconfigPath));
  readonly #stop = new AbortController();
  #done: Promise<void> = Promise.resolve();

  constructor(name: string) {
    this.name = name;
  }

  #record(node: LeanNode): void {
    if (this.snapshots.at(-1)?.resourceVersion === node.metadata.resourceVersion) return;
    this.snapshots.push({
      resourceVersion: node.metadata.resourceVersion,
      annotations: { ...node.metadata.annotations },
      labels: { ...node.metadata.labels },
      unschedulable: node.spec?.unschedulable === true,
    });
  }

  /** Records the current version, then follows the Node until stop(); re-lists if the watch ends. */
  async start(): Promise<void> {
    let node = await this.#client.getNode(this.name);
    this.#record(node);
    const signal = this.#stop.signal;
    this.#done = (async () => {
      while (!signal.aborted) {
        try {
          await this.#client.watchNode(
            this.name,
            node.metadata.resourceVersion,
            (type, n) => {
              if (type === 'ADDED' || type === 'MODIFIED') this.#record(n);
            },
            signal,
          );
        } catch {
          if (signal.aborted) break;
          await new Promise((r) => setTimeout(r, 200));
        }
        if (signal.aborted) break;
        node = await this.#client.getNode(this.name).catch(() => node);
        this.#record(node);
      }
    })();
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#done;
    this.#client.close();
  }

  /** Index of the first snapshot at or after `from` that matches, waiting for it up to the deadline. */
  waitFor(what: string, match: (s: Snapshot) => boolean, { from = 0, timeoutMs = 60_000 } = {}) {
    return pollUntil(
      `${this.name}: ${what}`,
      () => {
        const i = this.snapshots.findIndex((s, j) => j >= from && match(s));
        return i >= 0 ? i : undefined;
      },
      { timeoutMs, intervalMs: 50 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}\nlast seen: ${JSON.stringify(this.snapshots.at(-1), null, 1)}`);
    });
  }
}

test('a StatusUpdate on D-Bus leads, through the operator on the local cluster, to a logind Reboot call on that node’s bus', async (t) => {
  const defer = deferrals(t);

  // The host's services on its (private) system bus: an idle update_engine and a logind.
  const engine = new FakeUpdateEngine(bus.address);
  engine.set({ currentOperation: 'UPDATE_STATUS_IDLE', lastCheckedTime: 1_750_000_000n }, { emit: false });
  await engine.start();
  defer(() => engine.stop());
  const logind = await new FakeLogind(bus.address).start();
  defer(() => logind.stop());

  // The host's root, as the DaemonSet mounts it: only its os-release matters here.
  const hostRoot = await mkdtemp(join(tmpdir(), 'nuo-host-root-'));
  defer(() => rm(hostRoot, { recursive: true, force: true }));
  await mkdir(join(hostRoot, 'etc'));
  await writeFile(
    join(hostRoot, 'etc', 'os-release'),
    'NAME="Flatcar Container Linux by Kinvolk"\nID=flatcar\nVERSION_ID=4152.2.0\n',
  );

  // What the kubelet on this machine would report: node-0 runs in this machine's boot. (A KWOK node's
  // boot ID is otherwise unrelated to the boot the agent reads from /proc, and the operator would take
  // the difference for a completed reboot.)
  await core.patchNodeStatus(
    { name: 'node-0', body: { status: { nodeInfo: { bootID: BOOT_ID } } } },
    strategicMergePatch,
  );

  const node0 = new NodeHistory('node-0');
  const node1 = new NodeHistory('node-1');
  await node0.start();
  defer(() => node0.stop());
  await node1.start();
  defer(() => node1.stop());

  await installPolicyCrd(cluster);
  await applyPolicy(cluster, 'e2e', { reboot: { soak: '1s' } });
  const operator = startNuo('operator', [
    'operator',
    `--kubeconfig=${cluster.kubeconfigPath}`,
    '--metrics-port=0',
    '--identity=e2e',
    '--lease-duration=3s',
    '--renew-deadline=2s',
    '--retry-period=500ms',
  ]);
  defer(() => terminate(operator));
  const agent = startNuo('agent-node-0', [
    'agent',
    '--node-name=node-0',
    `--kubeconfig=${cluster.kubeconfigPath}`,
    '--detector=update-engine',
    '--rebooter=logind',
    `--dbus-address=${bus.address}`,
    `--host-root=${hostRoot}`,
    `--check-interval=${CHECK_INTERVAL}`,
  ]);
  defer(() => terminate(agent));

  // The agent is up: it labelled its node from os-release and mirrored the idle engine, needing nothing.
  const up = await node0.waitFor('the agent to label it and mirror the idle update_engine', (s) => {
    return (
      s.labels[Labels.osId] === 'flatcar' &&
      s.labels[Labels.osVersion] === '4152.2.0' &&
      s.annotations[Annotations.status] === 'UPDATE_STATUS_IDLE'
    );
  });
  const idle = node0.snapshots[up] as Snapshot;
  assert.equal(idle.annotations[Annotations.rebootNeeded], undefined, 'no reboot needed yet');
  assert.equal(idle.annotations[Annotations.rebootOk], undefined);
  // It asked GetStatus once at start and once more when its StatusUpdate subscription was in place
  // (the watch reports "subscribed" only after AddMatch): from then on, no signal can be missed.
  await pollUntil('the agent to subscribe to StatusUpdate', () =>
    engine.getStatusCalls >= 2 ? true : undefined,
  );
  assert.ok(
    node0.snapshots.every((s) => s.annotations[Annotations.rebootNeeded] === undefined),
    'an idle engine never made the node need a reboot',
  );
  assert.equal(logind.calls.length, 0);
  assert.equal(agent.exitCode, null, 'the agent is running');
  assert.equal(operator.exitCode, null, 'the operator is running');

  // update_engine staged an update and says so on the bus.
  const mark = node0.snapshots.length;
  engine.set({ currentOperation: NEED_REBOOT, newVersion: '4152.2.1', newSize: 123_456_789n, progress: 1 });

  const needed = await node0.waitFor(
    'reboot-needed from the signal',
    (s) => s.annotations[Annotations.rebootNeeded] === 'true',
    { from: mark, timeoutMs: 30_000 },
  );
  const need = (node0.snapshots[needed] as Snapshot).annotations;
  assert.equal(need[Annotations.status], NEED_REBOOT);
  assert.equal(need[Annotations.newVersion], '4152.2.1');
  assert.match(need[Annotations.rebootNeededReason] ?? '', /4152\.2\.1/);

  const draining = await node0.waitFor('the operator to drain it', (s) => {
    return s.annotations[Annotations.state] === Phase.draining && s.unschedulable;
  });
  assert.ok(draining > needed, 'drained after the need was published');
  const granted = await node0.waitFor('the grant', (s) => {
    return (
      s.annotations[Annotations.rebootOk] !== undefined &&
      s.annotations[Annotations.state] === Phase.rebootGranted
    );
  });
  assert.ok(granted > draining, 'granted after the drain');
  const grant = node0.snapshots[granted] as Snapshot;
  assert.equal(grant.unschedulable, true, 'cordoned when granted');
  assert.equal(grant.annotations[Annotations.cordonedByNuo], 'true');

  const started = await node0.waitFor('the agent to start the reboot', (s) => {
    return s.annotations[Annotations.rebootInProgress] === 'true';
  });
  assert.ok(started > granted, 'the agent acted on the grant');
  assert.equal(node0.snapshots[started]?.annotations[Annotations.bootIdBefore], BOOT_ID);

  await pollUntil('logind to receive Reboot', () => (logind.calls.length > 0 ? true : undefined), {
    timeoutMs: 30_000,
  });
  const [call] = logind.calls;
  assert.equal(call?.signature, 'b');
  assert.deepEqual(call?.body, [false], 'Reboot(interactive=false)');

  // The operator sees the reboot started (the boot ID is still this boot's, so not yet done).
  const rebooting = await node0.waitFor('the operator to record Rebooting', (s) => {
    return s.annotations[Annotations.state] === Phase.rebooting;
  });
  assert.ok(rebooting > started);

  // Nothing makes it ask twice: not the operator's Rebooting write, not a further signal and check.
  const checks = engine.getStatusCalls;
  engine.set({ progress: 1 });
  await pollUntil('the agent to check again on a further signal', () =>
    engine.getStatusCalls > checks ? true : undefined,
  );
  // A negative can only be watched for a while: a bounded window, failing at the first extra call.
  for (const until = Date.now() + 2_000; Date.now() < until; ) {
    assert.equal(logind.calls.length, 1, 'exactly one Reboot call');
    await delay(100);
  }
  assert.equal(logind.calls.length, 1, 'exactly one Reboot call');
  assert.equal(agent.exitCode, null, 'the agent is still running (the fake logind does not reboot)');
  assert.equal(operator.exitCode, null, 'the operator is still running');

  // node-1 has no agent and no need: never admitted, never cordoned, never granted.
  assert.ok(node1.snapshots.length > 0);
  for (const s of node1.snapshots) {
    assert.equal(s.annotations[Annotations.rebootOk], undefined, 'node-1 was never granted');
    assert.equal(s.annotations[Annotations.rebootNeeded], undefined);
    assert.equal(s.unschedulable, false, 'node-1 was never cordoned');
    assert.ok(
      s.annotations[Annotations.state] === undefined || s.annotations[Annotations.state] === Phase.idle,
      `node-1 stayed idle (state ${s.annotations[Annotations.state]})`,
    );
  }
});
