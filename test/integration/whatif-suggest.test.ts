/**
 * `nuo whatif run --suggest` on the real control plane, from a kubectl dump whose answer is known: each
 * of the eight nodes of pool main holds one pod of shop/web, which may run nowhere else (one per node,
 * main's nodes only), under a PDB that allows five disruptions; two spare nodes are in no pool. An
 * evicted pod waits for its own node to come back, so up to four nodes at once never meet the PDB, and
 * six at once always do: budget 4 (two rounds) is the fastest that keeps it unblocked. (Five, whose
 * drains race a returning pod, is not among the budgets tried.)
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { SuggestOutput } from '../../src/whatif/suggest-report.ts';

const ZONE = 'topology.kubernetes.io/zone';
const nuoBin = fileURLToPath(new URL('../../bin/nuo.js', import.meta.url));

function nuo(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [nuoBin, ...args],
      { timeout: 840_000, maxBuffer: 64 * 2 ** 20 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

const dir = mkdtempSync(join(tmpdir(), 'nuo-whatif-suggest-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Nodes 0-7 in pool main, 8-9 spare; web's eight pods one per node of main. */
function spreadDump(dump: string): void {
  const nodes = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => {
    const pool = i < 8 ? 'main' : 'spare';
    return {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: `node-${i}`,
        labels: { [ZONE]: 'zone-a', 'kubernetes.io/hostname': `node-${i}`, pool },
      },
      status: {
        capacity: { cpu: '8', memory: '32Gi', pods: '110' },
        allocatable: { cpu: '8', memory: '32Gi', pods: '110' },
        conditions: [{ type: 'Ready', status: 'True' }],
      },
    };
  });
  const web = { app: 'web' };
  const template = {
    metadata: { labels: web },
    spec: {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['main'] }] }],
          },
        },
        podAntiAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [
            { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: web } },
          ],
        },
      },
      containers: [{ name: 'web', image: 'registry.internal/web:1' }],
    },
  };
  const pods = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `web-${i}`,
      namespace: 'shop',
      labels: web,
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', controller: true }],
    },
    spec: { ...template.spec, nodeName: `node-${i}` },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  }));
  const items = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'shop' },
      spec: { replicas: 8, selector: { matchLabels: web }, template },
    },
    ...pods,
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'web', namespace: 'shop' },
      spec: { maxUnavailable: 5, selector: { matchLabels: web } },
      status: { disruptionsAllowed: 5, currentHealthy: 8, desiredHealthy: 3, expectedPods: 8 },
    },
    {
      apiVersion: 'nuo.dev/v1alpha1',
      kind: 'UpdatePolicy',
      metadata: { name: 'main' },
      spec: { nodeSelector: { matchLabels: { pool: 'main' } }, maxUnavailable: 1, reboot: { soak: '1s' } },
    },
  ];
  mkdirSync(dump);
  writeFileSync(
    join(dump, 'cluster.json'),
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...nodes, ...items] }),
  );
}

test('nuo whatif run --suggest tries each budget on a fresh twin and suggests the fastest that keeps the PDB unblocked', async () => {
  const dump = join(dir, 'spread');
  spreadDump(dump);
  const svg = join(dir, 'suggested.svg');
  const r = await nuo(
    'whatif',
    'run',
    '--from',
    dump,
    '--suggest',
    '--suggest-max=5',
    '--reboot-time=10s',
    '--speed=5',
    '--timeout=400s',
    '--window=1h',
    '-o',
    'json',
    `--svg=${svg}`,
  );
  assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`);
  assert.match(
    r.stderr,
    /trying 5 setting\(s\) of UpdatePolicy main \(8 node\(s\)\) on fresh twins of .*spread, one after another: each at most .*, at most .* in all/,
  );
  const output = JSON.parse(r.stdout) as SuggestOutput;
  const row = (t: SuggestOutput['tried'][number]) => ({
    budget: t.settings.maxUnavailable,
    current: t.current,
    eligible: t.eligible,
    finished: t.finished,
    pdbsBlocked: t.pdbsBlocked,
    stuck: t.stuck,
    fitsWindow: t.fitsWindow,
  });
  const byBudget = [...output.tried].sort(
    (a, b) => Number(a.settings.maxUnavailable) - Number(b.settings.maxUnavailable),
  );
  const log = `${r.stderr}\n${r.stdout}`;
  const clean = { eligible: true, finished: 8, pdbsBlocked: [], stuck: [], fitsWindow: true };
  assert.deepEqual(
    byBudget.map(row),
    [
      { budget: 1, current: true, ...clean },
      { budget: 2, current: false, ...clean },
      { budget: 3, current: false, ...clean },
      { budget: 4, current: false, ...clean },
      { ...clean, budget: 6, current: false, eligible: false, pdbsBlocked: ['shop/web'] },
    ],
    log,
  );
  const totals = byBudget.map((t) => t.totalMs ?? Number.NaN);
  assert.ok(
    totals.slice(1, 4).every((ms, i) => ms < (totals[i] ?? 0)),
    `each budget up to 4 faster than the one before: ${totals.join(', ')} ms`,
  );
  assert.deepEqual(output.suggestion?.settings, { maxUnavailable: 4, zoneOrder: 'Parallel' }, log);
  assert.equal(
    output.suggestion?.kubectl,
    `kubectl patch updatepolicy main --type merge -p '{"spec":{"maxUnavailable":4,"maxUnavailablePerZone":null,"zoneOrder":"Parallel"}}'`,
  );
  assert.equal(output.tried[0]?.settings.maxUnavailable, 4, 'the suggestion comes first');
  assert.equal(output.notTried, 1, 'budget 8, past --suggest-max');
  assert.deepEqual(
    output.tried.flatMap((t) => t.violations),
    [],
  );
  // The spare nodes never finish: each run ended when main's nodes had, well before its deadline.
  for (const t of output.tried) assert.ok((t.elapsedMs ?? Number.POSITIVE_INFINITY) < 400_000, log);
  const picture = readFileSync(svg, 'utf8');
  assert.equal([...picture.matchAll(/<g class="node" data-node="node-\d"/g)].length, 10);
});
