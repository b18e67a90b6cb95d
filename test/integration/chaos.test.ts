/**
 * A short chaos run on the real control plane (the long one is `npm run chaos`): rollouts while every
 * kind of fault strikes (leaders killed, paused past their Lease or restarted with a skewed clock; agents,
 * the API server and etcd restarted or paused; admins cordoning and uncordoning; a node deleted mid-attempt;
 * hostile values and forged grants from a third client; the PDB tightened mid-drain), with delayed
 * reboots and a node that never returns; also under UpdatePolicies, beside an upgrade Plan, with a
 * pool of FLUO's real update-agents, and through every gate of a policy (health check, waves and a
 * halt resumed, remediation, refresh). The independent checker of each run must see no violation.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ChaosOptions, type ChaosResult, runChaos } from '../../src/sim/chaos.ts';
import { BASE_FAULT_KINDS } from '../../src/sim/chaos-plan.ts';
import { useCluster } from './support.ts';

const NODES = 6;
/** Seeds 12 and 13: together every kind of fault (the unit test of the plans checks it); one node never returns. */
const SEED = 12;
const RUNS = 2;

const cluster = await useCluster({ nodes: NODES, zones: 2 });

/**
 * Runs a campaign on the shared cluster; the transcript (every run's plan and outcome, and the command
 * that replays it) goes with every assertion's message, since CI keeps only the failure's message.
 */
async function campaign(
  o: Pick<ChaosOptions, 'runs' | 'seed' | 'policies' | 'plans' | 'fluo' | 'gates'>,
): Promise<{ result: ChaosResult; transcript: string; violations: string[] }> {
  const lines: string[] = [];
  const result = await runChaos({
    cluster,
    nodes: NODES,
    maxUnavailable: 2,
    ...o,
    log: (line) => lines.push(line),
  }).catch((err: Error) => {
    throw new Error(`${err.message}\n${lines.join('\n')}`, { cause: err });
  });
  const transcript = `\n${lines.join('\n')}\nreproduce: ${result.reproduce}`;
  const violations = result.runs.flatMap((r) =>
    r.violations.map((v) => `seed ${r.plan.seed}: ${v.rule}: ${v.detail}`),
  );
  assert.deepEqual(
    result.runs.flatMap((r) => r.runaways),
    [],
    `no operator ran away with its memory${transcript}`,
  );
  return { result, transcript, violations };
}

test(`chaos: ${RUNS} runs from seed ${SEED}, every base fault kind injected, no violation`, async () => {
  const { result, transcript, violations } = await campaign({ runs: RUNS, seed: SEED });
  assert.deepEqual(violations, [], `the checkers saw no violation${transcript}`);
  assert.equal(result.runs.filter((r) => r.finished).length, RUNS, `every run finished${transcript}`);
  for (const kind of BASE_FAULT_KINDS) {
    assert.ok(
      result.injected[kind] > 0,
      `${kind} was injected (${JSON.stringify(result.injected)})${transcript}`,
    );
  }
  assert.deepEqual(
    result.runs.flatMap((r) => r.skipped),
    [],
    `no planned fault was skipped${transcript}`,
  );
  // The plans are the seed's: the node that never returns was planned, and it ended Failed as expected.
  assert.ok(
    result.expectedStalls >= 1 &&
      result.runs.every((r) => (r.expectedStall ?? undefined) === r.plan.neverReturns),
    `the planned node that never returns ended Failed${transcript}`,
  );
});

/** Seed 12 with UpdatePolicies: two pools with zone caps under the faults of its plan. */
const POLICY_SEED = 12;

test(`chaos with UpdatePolicies: seed ${POLICY_SEED}, two pools with zone caps, no violation`, async () => {
  const { result, transcript, violations } = await campaign({ runs: 1, seed: POLICY_SEED, policies: true });
  assert.deepEqual(
    violations,
    [],
    `the checkers saw no violation of any pool's budget or zone cap${transcript}`,
  );
  assert.equal(result.runs.filter((r) => r.finished).length, 1, `the run finished${transcript}`);
  assert.ok(result.reproduce.endsWith('--policies'), result.reproduce);
});

/** Seed 12 with an upgrade Plan: its Jobs drain two nodes at a time beside the staged reboots. */
const PLAN_SEED = 12;

test(`chaos with an upgrade Plan: seed ${PLAN_SEED}, Plan attempts and reboots in one budget, no violation`, async () => {
  const { result, transcript, violations } = await campaign({ runs: 1, seed: PLAN_SEED, plans: true });
  assert.deepEqual(violations, [], `no violation of the budget, nor of the Plan's concurrency${transcript}`);
  assert.equal(
    result.runs.filter((r) => r.finished).length,
    1,
    `the reboots done and the Plan applied on every node that returned${transcript}`,
  );
  assert.ok(result.reproduce.endsWith('--plans'), result.reproduce);
});

/** Seed 12 with --fluo: FLUO's node-0 has its agent's container killed, is deleted mid-attempt and given hostile values. */
const FLUO_SEED = 12;

test(`chaos with FLUO's real update-agent: seed ${FLUO_SEED}, a FLUO pool beside a nuo pool, no violation`, async () => {
  const { result, transcript, violations } = await campaign({ runs: 1, seed: FLUO_SEED, fluo: true });
  assert.deepEqual(violations, [], `no violation in either pool${transcript}`);
  assert.equal(result.runs.filter((r) => r.finished).length, 1, `the run finished${transcript}`);
  assert.deepEqual(
    result.runs.flatMap((r) => r.skipped),
    [],
    `every planned fault struck, on FLUO's nodes too${transcript}`,
  );
  // The seed's plan, so a change of plans cannot leave the FLUO pool untouched unnoticed.
  const plan = result.runs[0]?.plan ?? assert.fail(`no run${transcript}`);
  const fluoNodes = ['node-0', 'node-1'];
  assert.deepEqual(
    plan.updates.map((u) => u.node).filter((n) => fluoNodes.includes(n)),
    fluoNodes,
    'both FLUO nodes are updated',
  );
  const onFluo = plan.faults.flatMap((f) => ('node' in f && f.node === 'node-0' ? [f.kind] : []));
  for (const kind of ['restart-agent', 'delete-node'] as const)
    assert.ok(onFluo.includes(kind), `${kind} strikes FLUO's node-0 (${onFluo.join(', ')})`);
  assert.ok(result.reproduce.endsWith('--fluo'), result.reproduce);
});

/**
 * Seed 21 with --gates: node-3 comes back past its returnTimeout (the pool halts and the run resumes
 * it), node-1 (no update) is remediated, node-5 (no update) refreshed, the Widget turns unhealthy.
 */
const GATES_SEED = 21;

test(`chaos through the gates: seed ${GATES_SEED}, a halt resumed, a remediation, a refresh, the health check flipped, no violation`, async () => {
  const { result, transcript, violations } = await campaign({ runs: 1, seed: GATES_SEED, gates: true });
  assert.deepEqual(violations, [], `no violation of the gates' rules, nor of the others${transcript}`);
  assert.equal(result.runs.filter((r) => r.finished).length, 1, `the run finished${transcript}`);
  const g = result.gates ?? assert.fail(`no gates tally${transcript}`);
  for (const k of ['unhealthy', 'halts', 'resumes', 'remediations', 'refreshes'] as const)
    assert.ok(g[k] >= 1, `${k}: ${JSON.stringify(g)}${transcript}`);
  assert.ok(result.reproduce.endsWith('--gates'), result.reproduce);
});
