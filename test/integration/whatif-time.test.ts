/**
 * `nuo whatif run`'s times on the real control plane.
 *
 * Windows on a simulated clock: a pool of
 * six nodes whose policy opens a 20-minute window every hour, one node at a time, each host down 5
 * minutes, rolled 30 times faster than real time from just before a window. No window holds more than
 * four attempts (each lasts at least the 5-minute reboot), so the rollout must span two windows at
 * least; the twin's operator reads the windows on the simulated clock, so each attempt begins inside
 * one, which the test checks from the node timelines, not from the report's own words.
 *
 * Durations from history: a small rollout on a local cluster leaves its measured durations in the
 * UpdatePolicy's status; a snapshot of that cluster predicts with them when no time is given.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../../src/api/crd.ts';
import type { UpdatePolicy } from '../../src/api/update-policy.ts';
import type { RunOutput } from '../../src/cli/whatif-run.ts';
import { startCluster } from '../../src/sim/cluster/cluster.ts';
import { applyPolicy, installPolicyCrd } from '../../src/sim/policies.ts';
import { OPERATOR_USER, rollCluster } from '../../src/sim/whatif-run.ts';
import { nuo } from './whatif-cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'nuo-whatif-windows-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const MINUTE = 60_000;
/** The window: 20 minutes from each full hour. */
const WINDOW_MS = 20 * MINUTE;
/** Simulated minutes per real second. */
const SPEED = 30;

function dump(path: string): void {
  const nodes = [0, 1, 2, 3, 4, 5].map((i) => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: `node-${i}`, labels: { 'kubernetes.io/hostname': `node-${i}`, pool: 'main' } },
    status: {
      capacity: { cpu: '8', memory: '32Gi', pods: '110' },
      allocatable: { cpu: '8', memory: '32Gi', pods: '110' },
      conditions: [{ type: 'Ready', status: 'True' }],
    },
  }));
  const policy = {
    apiVersion: 'nuo.dev/v1alpha1',
    kind: 'UpdatePolicy',
    metadata: { name: 'hourly' },
    spec: {
      nodeSelector: { matchLabels: { pool: 'main' } },
      maxUnavailable: 1,
      windows: { cron: [{ schedule: '0 * * * *', duration: '20m' }] },
    },
  };
  mkdirSync(path);
  writeFileSync(
    join(path, 'cluster.json'),
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...nodes, policy] }),
  );
}

test('nuo whatif run --speed 30 --start: windows read on the simulated clock, the rollout spans two windows, every attempt begins inside one', async () => {
  const path = join(dir, 'hourly');
  dump(path);
  const r = await nuo(
    [
      'whatif',
      'run',
      '--from',
      path,
      '--reboot-time=5m',
      `--speed=${SPEED}`,
      '--start=2026-11-23T08:55:00Z',
      '--timeout=5h',
      '-o',
      'json',
    ],
    600_000,
  );
  const report = JSON.parse(r.stdout) as RunOutput;
  assert.equal(r.code, 0, `every node finishes: ${r.stderr}\n${r.stdout}`);
  assert.ok(report.startsAt !== undefined && report.startsAt >= '2026-11-23T08:55:00.000Z', report.startsAt);
  const start = Date.parse(report.startsAt);

  // From the observed timelines: each attempt's start on the simulated calendar.
  const starts = report.nodes.flatMap((n) =>
    n.attempts.map((a) => ({ node: n.name, at: start + a.startMs })),
  );
  assert.equal(starts.length, 6, JSON.stringify(report.nodes));
  // An attempt begins when its admission is decided, which its phase's time records even when the
  // admission's node write is redone after a conflict.
  for (const s of starts) {
    const intoHour = s.at % (60 * MINUTE);
    assert.ok(
      intoHour < WINDOW_MS,
      `${s.node} began at ${new Date(s.at).toISOString()}, outside every window`,
    );
  }
  const hours = new Set(starts.map((s) => Math.floor(s.at / (60 * MINUTE))));
  assert.ok(hours.size >= 2, `attempts began in ${hours.size} window(s): ${JSON.stringify(starts)}`);

  // The report: the windows used, each a 20-minute opening on the simulated calendar, holding every start.
  const used = report.windowsUsed ?? [];
  assert.equal(used.length, hours.size, JSON.stringify(used));
  for (const w of used) {
    assert.equal(w.pool, 'hourly');
    assert.ok(w.opens !== undefined && w.closes !== undefined, JSON.stringify(w));
    assert.match(w.opens, /^2026-11-23T\d\d:00:00\.000Z$/);
    assert.equal(Date.parse(w.closes) - Date.parse(w.opens), WINDOW_MS);
  }
  assert.deepEqual(used.flatMap((w) => w.nodes).sort(), report.nodes.map((n) => n.name).sort());
  for (const n of report.nodes) {
    assert.ok(n.startAt !== undefined && n.finishAt !== undefined && n.finishAt > n.startAt, n.name);
    assert.ok(n.startAt.startsWith('2026-11-23T'), n.startAt);
  }
  // Each attempt's own reason, as the policy's windows read at its start.
  for (const reasons of report.windows) for (const w of reasons.windows) assert.match(w, /^inside window/);
  assert.deepEqual(report.violations, []);
});

test('a rollout leaves its measured durations in the policy status, and nuo whatif run from that cluster predicts with them', async () => {
  const cluster = await startCluster({ nodes: 3, audit: { users: [OPERATOR_USER] } });
  let up = true;
  try {
    await installPolicyCrd(cluster);
    const spec = { maxUnavailable: 1, reboot: { soak: '1s' } };
    await applyPolicy(cluster, 'main', spec);
    // Hosts down 4 s: the operator measures from the grant to the new boot, so each reboot is 4 s or more.
    const observed = await rollCluster(
      cluster,
      [{ apiVersion: 'nuo.dev/v1alpha1', kind: 'UpdatePolicy', metadata: { name: 'main' }, spec }],
      [],
      { rebootMs: 4000, timeoutMs: 240_000, log: () => {} },
    );
    assert.ok(
      observed.nodes.every((n) => n.finished),
      JSON.stringify(observed.nodes.map((n) => [n.name, n.phases.at(-1)])),
    );
    const read = (await cluster.kubeconfig.makeApiClient(CustomObjectsApi).getClusterCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      plural: UPDATE_POLICY.plural,
      name: 'main',
    })) as UpdatePolicy;
    const d = read.status?.durations;
    assert.ok(d, `status.durations written: ${JSON.stringify(read.status)}`);
    assert.ok(d.samples >= 1 && d.samples <= 3, `one sample per attempt at most: ${JSON.stringify(d)}`);
    assert.equal(d.rebootSeconds.length, d.samples);
    for (const s of d.rebootSeconds) assert.ok(s >= 4 && s < 40, `a reboot of ${s} s for a host down 4 s`);
    const reboot = d.rebootP50Seconds ?? Number.NaN;
    assert.ok(reboot >= 4, String(reboot));
    // A simulated host posts its new boot ID and Ready in one write; the operator may read them a moment
    // apart on a loaded machine (0.1 s was seen), never a reboot's length.
    assert.equal(d.returnSeconds.length, d.samples);
    for (const s of d.returnSeconds)
      assert.ok(s >= 0 && s < 1, `a return of ${s} s for a host Ready as it boots`);

    const snapshotFile = join(dir, 'measured.yaml');
    const snap = await nuo(['whatif', 'snapshot', `--kubeconfig=${cluster.kubeconfigPath}`]);
    assert.equal(snap.code, 0, snap.stderr);
    writeFileSync(snapshotFile, snap.stdout);
    await cluster.stop();
    up = false;

    // No --reboot-time: each host of pool main is down the median measured.
    const r = await nuo(
      ['whatif', 'run', '--from', snapshotFile, '--speed=2', '--timeout=4m', '-o', 'json'],
      600_000,
    );
    const report = JSON.parse(r.stdout) as RunOutput;
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(report.times?.[0], {
      pool: 'main',
      rebootMs: Math.round(reboot * 1000),
      returnMs: 0,
      rebootFrom: 'measured',
      returnFrom: 'measured',
      measuredAttempts: d.samples,
    });
    // The twin's hosts were down that long, not the default minute: from each grant to its finish.
    for (const n of report.nodes) {
      const down = (n.finishMs ?? 0) - (n.drainedMs ?? 0);
      assert.ok(down >= reboot * 1000 && down < 60_000, `${n.name}: ${down} ms from its grant to its finish`);
    }
  } finally {
    if (up) await cluster.stop();
  }
});
