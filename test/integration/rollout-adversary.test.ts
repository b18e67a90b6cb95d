/**
 * What an adversarial rollout found, on the real control plane: coincident completions with an admin's
 * cordon, grants written by a third client, hostile and oversized values, a reboot requested for a later
 * time, and a soak that passed while the operator could not see it. The independent checker fails every
 * test on any breach of the safety rules.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { type AddressInfo, createServer } from 'node:net';
import { after, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { AppsV1Api, CoordinationV1Api, CoreV1Api, PolicyV1Api } from '@kubernetes/client-node';
import { fromPrivatePem, GRANT_KEY_NAME, PRIVATE_KEY_FIELD, signGrant } from '../../src/api/grant.ts';
import { Annotations } from '../../src/api/keys.ts';
import { Phase } from '../../src/api/phases.ts';
import type { UpdatePolicySpec } from '../../src/api/update-policy.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import { type AuditEvent, readAuditLog } from '../../src/sim/cluster/audit.ts';
import { Fleet } from '../../src/sim/fleet.ts';
import { RebootBehaviour } from '../../src/sim/host.ts';
import { deployment, waitAvailable } from '../../src/sim/workload.ts';
import { pollUntil } from '../../src/util/poll.ts';
import {
  type LogLine,
  operatorLog as operatorLogOf,
  operatorUnder,
  resetNodes,
  useCluster,
} from './support.ts';

const NODES = ['node-0', 'node-1', 'node-2', 'node-3', 'node-4', 'node-5'];
const ADMIN = 'nuo-admin';
const cluster = await useCluster({ nodes: NODES.length, zones: 2, audit: { users: [ADMIN] } });
const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
const policy = cluster.kubeconfig.makeApiClient(PolicyV1Api);
const coordination = cluster.kubeconfig.makeApiClient(CoordinationV1Api);
await core.createNamespace({ body: { metadata: { name: 'nuo-system' } } });

const HOOK = 'test.nuo.dev/after-reboot-ok';
/** A Lease that outlasts the few seconds a test holds the operator stopped (SIGSTOP). */
const LONG_LEASE = ['--lease-duration=60s', '--renew-deadline=45s', '--retry-period=2s'];

let fleet: Fleet | undefined;
let operator: ChildProcess | undefined;
after(async () => {
  operator?.kill('SIGCONT');
  await fleet?.stop();
});

/** A fleet on every node, its checker started before anything changes, and one operator. */
async function newFleet(
  budget: number,
  o: { reboot?: UpdatePolicySpec['reboot']; args?: string[] } = {},
  behaviours: Record<string, RebootBehaviour> = {},
): Promise<Fleet> {
  operator?.kill('SIGCONT');
  await fleet?.stop();
  await resetNodes(core, { uncordonAll: true });
  const f = new Fleet(cluster, { rebootMs: 300, budget, agentCheckIntervalMs: 2000, behaviours });
  fleet = f;
  await f.start();
  identity = `adversary-${++operators}`;
  operator = await operatorUnder(
    f,
    identity,
    { maxUnavailable: budget, ...(o.reboot ? { reboot: o.reboot } : {}) },
    o.args,
  );
  return f;
}
let operators = 0;
let identity = '';

const annotations = async (name: string) => (await core.readNode({ name })).metadata?.annotations ?? {};
const annotate = (name: string, values: Record<string, string | null>) =>
  core.patchNode({ name, body: { metadata: { annotations: values } } }, mergePatch);

function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  return pollUntil(what, check, { timeoutMs, intervalMs: 100 });
}

const inPhase = (name: string, phases: string[]) =>
  waitFor(`${name} in ${phases.join('|')}`, async () => {
    const state = (await annotations(name))[Annotations.state];
    return state && phases.includes(state) ? state : undefined;
  });

/** The rolled nodes each rebooted exactly once and are Idle with no need left. */
function rolledOnce(f: Fleet, rolled: string[]) {
  return waitFor(
    `${rolled.join(', ')} rebooted once and Idle`,
    async () => {
      for (const name of rolled) {
        const a = await annotations(name);
        if (a[Annotations.state] !== Phase.idle || a[Annotations.rebootNeeded] !== undefined)
          return undefined;
        if (f.checker.rebootsOf(name) !== 1) return undefined;
      }
      return true;
    },
    120_000,
  );
}

async function assertSafe(f: Fleet, exempt: string[] = []) {
  await f.checker.finalCheck(exempt);
  assert.deepEqual(f.checker.violations, [], 'the checker saw no violation');
}

/** The current operator's JSON log lines. */
const operatorLog = () => operatorLogOf(cluster, identity);

/** The operator's log line `matching`, once it is on disk (the log is written asynchronously). */
function logged(what: string, matching: (l: LogLine) => boolean): Promise<LogLine> {
  return waitFor(`the operator to log ${what}`, async () => operatorLog().find(matching));
}

/** A port nothing listens on now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function events(node: string, reason: string) {
  const list = await core.listNamespacedEvent({
    namespace: 'default',
    fieldSelector: `involvedObject.name=${node},reason=${reason}`,
  });
  return list.items;
}

/**
 * A namespace with one pod pinned to `node` under a PDB that allows no disruption: a drain of the node
 * waits, cordoned, until the test deletes PDB `pinned`.
 */
async function pinnedUnderPdb(ns: string, node: string): Promise<string> {
  await core.createNamespace({ body: { metadata: { name: ns } } });
  const pinned = deployment(ns, 'pinned', 1);
  const podSpec = pinned.spec?.template.spec;
  if (podSpec) podSpec.nodeSelector = { 'kubernetes.io/hostname': node };
  await apps.createNamespacedDeployment({ namespace: ns, body: pinned });
  await policy.createNamespacedPodDisruptionBudget({
    namespace: ns,
    body: {
      metadata: { name: 'pinned' },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'pinned' } } },
    },
  });
  await waitAvailable(apps, ns, 'pinned');
  return ns;
}

describe('adversarial rollouts', () => {
  test('two completions in one pass, one node cordoned by an admin: never more disrupted than the budget', async () => {
    const f = await newFleet(2, { reboot: { afterRebootAnnotations: [HOOK] }, args: LONG_LEASE });
    // node-0 is cordoned by an admin before the rollout: it counts as disrupted throughout.
    await core.patchNode({ name: 'node-0', body: { spec: { unschedulable: true } } }, mergePatch);
    const rolled = ['node-0', 'node-1', 'node-2', 'node-3'];
    f.stageUpdates(rolled);
    // node-0 and node-1 take the slots and wait at the health gate for their after-reboot hook; their
    // slots are promised to node-2 and node-3.
    await Promise.all(['node-0', 'node-1'].map((n) => inPhase(n, [Phase.afterReboot])));
    await waitFor('both slots promised', async () => {
      const ledger = await core.readNamespacedConfigMap({ name: 'nuo-slots', namespace: 'nuo-system' });
      const next = JSON.parse(ledger.data?.['ledger.json'] ?? '{}').next ?? {};
      return Object.keys(next).length === 2 ? true : undefined;
    });
    // Both hooks land while the operator is stopped: its next pass completes both, and each completion
    // hands its slot over at once.
    operator?.kill('SIGSTOP');
    try {
      await annotate('node-0', { [HOOK]: 'true' });
      await annotate('node-1', { [HOOK]: 'true' });
    } finally {
      operator?.kill('SIGCONT');
    }
    // Their successors pass their own hooks, asked for afresh when each is back (one at a time: node-0's
    // cordon takes a slot).
    const hooked = new Set<string>();
    await waitFor(
      'node-2 and node-3 back and their hooks passed',
      async () => {
        for (const node of ['node-2', 'node-3']) {
          if (hooked.has(node) || (await annotations(node))[Annotations.state] !== Phase.afterReboot)
            continue;
          await annotate(node, { [HOOK]: 'true' });
          hooked.add(node);
        }
        return hooked.size === 2 ? true : undefined;
      },
      120_000,
    );
    await rolledOnce(f, rolled);
    assert.ok(f.checker.maxDisrupted <= 2, `at most 2 disrupted at once, saw ${f.checker.maxDisrupted}`);
    const node0 = await core.readNode({ name: 'node-0' });
    assert.equal(node0.spec?.unschedulable, true, "the admin's cordon stays");
    await core.patchNode({ name: 'node-0', body: { spec: { unschedulable: false } } }, mergePatch);
    await assertSafe(f);
  });

  test('a grant another client writes reboots nothing: the operator removes and reports it, and a real need still rolls', async () => {
    const f = await newFleet(1);
    const key = fromPrivatePem(
      Buffer.from(
        (await waitFor('the grant key', () =>
          core
            .readNamespacedSecret({ name: GRANT_KEY_NAME, namespace: 'nuo-system' })
            .then((s) => s.data?.[PRIVATE_KEY_FIELD])
            .catch(() => undefined),
        )) ?? '',
        'base64',
      ).toString(),
    );
    const bootOf = async (name: string) => (await core.readNode({ name })).status?.nodeInfo?.bootID ?? '';
    // A typo or the old protocol's "true", a real grant for another node, and one for this node and boot
    // (as a backup restored after its attempt ended would hold): none is for an attempt holding a slot.
    const forgeries: Record<string, string> = {
      'node-1': 'true',
      'node-2': signGrant(key.privateKey, { node: 'node-4', bootId: await bootOf('node-4'), attempt: 'x' }),
      'node-3': signGrant(key.privateKey, { node: 'node-3', bootId: await bootOf('node-3'), attempt: 'x' }),
    };
    for (const [node, value] of Object.entries(forgeries))
      await annotate(node, { [Annotations.rebootOk]: value });
    for (const node of Object.keys(forgeries)) {
      await waitFor(`the forged grant on ${node} removed`, async () =>
        (await annotations(node))[Annotations.rebootOk] === undefined ? true : undefined,
      );
      const [event] = await waitFor(`a ForeignGrant Event for ${node}`, async () => {
        const found = await events(node, 'ForeignGrant');
        return found.length > 0 ? found : undefined;
      });
      assert.match(event?.message ?? '', /nuo gave no grant/);
    }
    for (const node of NODES) assert.equal(f.checker.rebootsOf(node), 0, `${node} did not reboot`);
    await logged(
      'the removal',
      (l) => l.msg === 'removed a reboot grant nuo did not give' && l.node === 'node-1',
    );
    // Each of them still reports a real need, and reboots once, through a grant nuo gave.
    f.stageUpdates(Object.keys(forgeries));
    await rolledOnce(f, Object.keys(forgeries));
    await assertSafe(f);
  });

  test('hostile and oversized values: read safely, reported once, no write storm, cleaned where nuo owns the key', async () => {
    const f = await newFleet(1);
    const huge = `${'x'.repeat(150_000)}`;
    const from = new Date();
    await annotate('node-1', { [Annotations.rebootRequested]: huge });
    await annotate('node-2', { [Annotations.state]: 'Garbage', [Annotations.failures]: 'abc' });
    await annotate('node-3', { [Annotations.paused]: 'maybe' });
    // node-1: the reason quotes a bounded prefix and the write lands.
    const reason = await waitFor('node-1 names its malformed request', async () => {
      const r = (await annotations('node-1'))[Annotations.stateReason];
      return r?.includes('150000 characters') ? r : undefined;
    });
    assert.ok(reason.length < 500, `${reason.length} characters`);
    // node-2: nuo's own keys are written afresh.
    await waitFor('node-2 Idle again, its count removed', async () => {
      const a = await annotations('node-2');
      return a[Annotations.state] === Phase.idle && a[Annotations.failures] === undefined ? true : undefined;
    });
    // Stage an update elsewhere: passes run, and the hostile values must not be written again and again.
    f.stageUpdates(['node-4']);
    await rolledOnce(f, ['node-4']);
    const patches = (await readAuditLog(cluster.auditLogPath ?? '', ADMIN)).filter(
      (e) =>
        e.verb === 'patch' &&
        e.objectRef?.resource === 'nodes' &&
        e.objectRef.name === 'node-1' &&
        !e.objectRef.subresource &&
        Date.parse(e.requestReceivedTimestamp) >= from.getTime(),
    );
    assert.ok(
      patches.length <= 3,
      `node-1 written ${patches.length} times (the test's own write, then the reason)`,
    );
    assert.ok(
      patches.every((e) => (e.responseStatus?.code ?? 0) < 400),
      `no write refused: ${patches.map((e) => e.responseStatus?.code).join(', ')}`,
    );
    // Each set of problems is one Event and one log line, whose message is about the bad input only.
    for (const node of ['node-1', 'node-2', 'node-3']) {
      const found = await events(node, 'MalformedAnnotation');
      assert.ok(
        found.length >= 1 && found.length <= 2,
        `${node}: ${found.length} MalformedAnnotation Event(s)`,
      );
      for (const e of found) assert.match(e.message ?? '', /^ignored malformed annotations: nuo\.dev\//);
      await logged(`${node}'s problems`, (l) => l.msg === 'malformed annotations ignored' && l.node === node);
    }
    assert.equal(f.checker.rebootsOf('node-3'), 0, 'paused="maybe" reads as paused');
    await annotate('node-1', { [Annotations.rebootRequested]: null });
    await annotate('node-3', { [Annotations.paused]: null });
    await assertSafe(f);
  });

  test('a running operator answers /readyz and /healthz with ok (the 503 cases are unit-tested in operator-probes)', async () => {
    const port = await freePort();
    const f = await newFleet(1, { args: [`--metrics-port=${port}`] });
    const get = (path: string) =>
      fetch(`http://127.0.0.1:${port}${path}`).then(async (r) => ({
        status: r.status,
        body: await r.text(),
      }));
    const ready = await waitFor('/readyz to answer 200', () =>
      get('/readyz')
        .then((r) => (r.status === 200 ? r : undefined))
        .catch(() => undefined),
    );
    assert.equal(ready.body, 'ok');
    assert.deepEqual(await get('/healthz'), { status: 200, body: 'ok' });
    assert.equal((await get('/nothing')).status, 404);
    await assertSafe(f);
  });

  test("an agent's problem is reported once: an Event and a log line", async () => {
    await newFleet(1);
    const problem = 'the host did not reboot within 10m of the request';
    await annotate('node-5', { [Annotations.agentProblem]: problem });
    const [event] = await waitFor('an AgentProblem Event', async () => {
      const found = await events('node-5', 'AgentProblem');
      return found.length > 0 ? found : undefined;
    });
    assert.equal(event?.message, problem);
    await waitFor('a log line', async () =>
      operatorLog().some((l) => l.msg === "the node's agent reports a problem" && l.node === 'node-5')
        ? true
        : undefined,
    );
    await annotate('node-5', { [Annotations.agentProblem]: null });
  });

  test('a reboot requested for a later time waits until then; one in 2099 does not reboot now', async () => {
    const f = await newFleet(2);
    await annotate('node-1', { [Annotations.rebootRequested]: '2099-01-01T00:00:00Z' });
    const soon = new Date(Date.now() + 6000);
    f.checker.allowReboots('node-2');
    await annotate('node-2', { [Annotations.rebootRequested]: soon.toISOString() });
    await waitFor('node-1 says it waits', async () =>
      (await annotations('node-1'))[Annotations.stateReason]?.startsWith('reboot requested for 2099-01-01')
        ? true
        : undefined,
    );
    await waitFor('node-2 rebooted', async () => (f.checker.rebootsOf('node-2') === 1 ? true : undefined));
    const admitted = await logged("node-2's admission", (l) => l.msg === 'admitted' && l.node === 'node-2');
    assert.ok(
      Number(admitted?.time) >= soon.getTime(),
      `node-2 admitted at ${new Date(Number(admitted?.time)).toISOString()}, not before ${soon.toISOString()}`,
    );
    await rolledOnce(f, ['node-2']);
    assert.equal(f.checker.rebootsOf('node-1'), 0, 'the 2099 request waits');
    const state = (await annotations('node-1'))[Annotations.state];
    assert.ok(state === undefined || state === Phase.idle, `node-1 ${state}, never in an attempt`);
    await annotate('node-1', { [Annotations.rebootRequested]: null });
    await assertSafe(f);
  });

  test('a need that survives its reboot: the next attempt waits out a backoff, and past the limit nuo stops and says so', async () => {
    const f = await newFleet(
      1,
      { reboot: { retryBackoff: '3s', maxIneffectiveReboots: 2 } },
      {
        'node-1': RebootBehaviour.needSurvives,
      },
    );
    f.checker.allowReboots('node-1', 2);
    f.stageUpdates(['node-1']);
    const stopped = await waitFor(
      'node-1 held back after two reboots that left the need in place',
      async () => {
        const r = (await annotations('node-1'))[Annotations.stateReason];
        return r?.startsWith('stopped: the need survived 2 reboots in a row') ? r : undefined;
      },
      120_000,
    );
    assert.match(stopped, /remove nuo\.dev\/ineffective-reboots to try again/);
    assert.equal(f.checker.rebootsOf('node-1'), 2);
    const log = operatorLog().filter((l) => l.node === 'node-1');
    // The backoff counts from the end the first attempt wrote (endedAt), not from when that was logged.
    const ended = log.filter((l) => l.msg === 'completed').map((l) => Date.parse(String(l.endedAt)));
    const admitted = log.filter((l) => l.msg === 'admitted').map((l) => Number(l.time));
    assert.equal(admitted.length, 2, 'admitted twice');
    const waited = (admitted[1] ?? 0) - (ended[0] ?? Number.NaN);
    assert.ok(waited >= 3000, `the second attempt waited out the 3 s backoff: ${waited} ms`);
    // Stopped for good: a bounded look shows no third attempt (an absence cannot be awaited).
    await delay(4000);
    assert.equal(f.checker.rebootsOf('node-1'), 2, 'no third reboot');
    assert.equal((await annotations('node-1'))[Annotations.state], Phase.pending);
    await assertSafe(f);
  });

  test("a hook's value from an earlier attempt does not let the next attempt skip its hook", async () => {
    const before = 'test.nuo.dev/before-ok';
    const f = await newFleet(1, { reboot: { beforeRebootAnnotations: [before] } });
    f.stageUpdates(['node-1']);
    await inPhase('node-1', [Phase.beforeReboot]);
    await annotate('node-1', { [before]: 'true' });
    await rolledOnce(f, ['node-1']);
    assert.equal((await annotations('node-1'))[before], undefined, 'cleared once the hook had passed');
    // A stale "true" written back (a hook that ran late, a restored object): cleared at the next admission.
    await annotate('node-1', { [before]: 'true' });
    f.checker.allowReboots('node-1');
    f.hosts.get('node-1')?.stageUpdate();
    await inPhase('node-1', [Phase.beforeReboot]);
    const waiting = await waitFor('node-1 waits for its hook again', async () => {
      const a = await annotations('node-1');
      return a[before] === undefined && a[Annotations.state] === Phase.beforeReboot ? a : undefined;
    });
    assert.match(waiting[Annotations.stateReason] ?? '', /waiting for before-reboot hooks/);
    await annotate('node-1', { [before]: 'true' });
    await waitFor('node-1 rebooted twice and Idle', async () =>
      f.checker.rebootsOf('node-1') === 2 && (await annotations('node-1'))[Annotations.state] === Phase.idle
        ? true
        : undefined,
    );
    await assertSafe(f);
  });

  test('a node an admin uncordons mid-drain is cordoned and drained again before its reboot, never rebooted schedulable', async () => {
    const f = await newFleet(1);
    const ns = await pinnedUnderPdb('uncordon', 'node-1');
    try {
      f.stageUpdates(['node-1']);
      await inPhase('node-1', [Phase.draining]);
      // The PDB allows no disruption: once the drain runs, it cannot end before the PDB goes.
      await waitFor('node-1 draining, cordoned by nuo', async () =>
        operatorLog().some((l) => l.msg === 'draining' && l.node === 'node-1') &&
        (await annotations('node-1'))[Annotations.cordonedByNuo] === 'true'
          ? true
          : undefined,
      );
      // kubectl uncordon, mid-drain.
      await core.patchNode({ name: 'node-1', body: { spec: { unschedulable: false } } }, mergePatch);
      await policy.deleteNamespacedPodDisruptionBudget({ name: 'pinned', namespace: ns });
      await rolledOnce(f, ['node-1']);
      await assertSafe(f);
      assert.ok(
        (await events('node-1', 'UncordonedMidAttempt')).length >= 1,
        'the operator said it cordoned and drained the node again',
      );
    } finally {
      await core.deleteNamespace({ name: ns });
    }
  });

  test('a leader paused past its Lease sends nothing it had queued once it resumes: no eviction, no Event', async () => {
    const f = await newFleet(1);
    const paused = identity;
    const pausedProcess = operator;
    const holder = async () =>
      (await coordination.readNamespacedLease({ name: 'nuo-operator', namespace: 'nuo-system' })).spec
        ?.holderIdentity;
    await waitFor('the first replica to lead', async () => ((await holder()) === paused ? true : undefined));
    const standby = `adversary-${++operators}`;
    await operatorUnder(f, standby, { maxUnavailable: 1 });
    const ns = await pinnedUnderPdb('fence', 'node-1');
    const mine = (e: AuditEvent) => e.userAgent?.includes(`(${paused})`) === true;
    try {
      f.stageUpdates(['node-1']);
      // The PDB refuses its evictions: the drain retries them, some always waiting for their turn.
      await waitFor('the leader to have an eviction refused', async () =>
        (await readAuditLog(cluster.auditLogPath ?? '', ADMIN)).some(
          (e) => mine(e) && e.objectRef?.subresource === 'eviction' && e.responseStatus?.code === 429,
        )
          ? true
          : undefined,
      );
      pausedProcess?.kill('SIGSTOP');
      await waitFor('the standby to lead', async () => ((await holder()) === standby ? true : undefined));
      const resumed = Date.now();
      pausedProcess?.kill('SIGCONT');
      await waitFor('the resumed replica to say it stopped leading', async () =>
        operatorLog().some((l) => l.msg === 'stopped leading: no further actions') ? true : undefined,
      );
      await policy.deleteNamespacedPodDisruptionBudget({ name: 'pinned', namespace: ns });
      await rolledOnce(f, ['node-1']);
      // Audit events are written in batches: wait until the log holds a request made after the rollout.
      const done = Date.now();
      await core.readNode({ name: 'node-0' });
      const audit = await waitFor('the audit log to reach the end of the rollout', async () => {
        const events = await readAuditLog(cluster.auditLogPath ?? '', ADMIN);
        return events.some((e) => Date.parse(e.requestReceivedTimestamp) >= done) ? events : undefined;
      });
      const late = audit.filter(
        (e) =>
          mine(e) &&
          Date.parse(e.requestReceivedTimestamp) >= resumed &&
          !['get', 'list', 'watch'].includes(e.verb) &&
          e.objectRef?.resource !== 'leases',
      );
      assert.deepEqual(
        late.map(
          (e) => `${e.verb} ${e.objectRef?.resource}/${e.objectRef?.subresource ?? ''} ${e.objectRef?.name}`,
        ),
        [],
        'the resumed replica changed nothing (its own Lease aside)',
      );
      await assertSafe(f);
    } finally {
      pausedProcess?.kill('SIGCONT');
      await core.deleteNamespace({ name: ns });
    }
  });

  test('a soak that passed while the operator was stopped is not counted: the soak is time it saw', async () => {
    const f = await newFleet(1, { reboot: { soak: '4s' }, args: LONG_LEASE });
    const host = f.hosts.get('node-1');
    assert.ok(host);
    const boot = host.bootIdValue;
    f.stageUpdates(['node-1']);
    await waitFor('node-1 going down for its reboot', async () =>
      f.checker.rebootsOf('node-1') === 1 ? true : undefined,
    );
    operator?.kill('SIGSTOP');
    try {
      await waitFor('node-1 back and Ready', async () => {
        const n = await core.readNode({ name: 'node-1' });
        const ready = n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
        return host.bootIdValue !== boot && ready ? true : undefined;
      });
      // Longer than the soak, unseen by the stopped operator: time passing is the point here.
      await delay(5000);
    } finally {
      operator?.kill('SIGCONT');
    }
    await rolledOnce(f, ['node-1']);
    // The node can be Idle before the line saying so is on disk.
    const at = (msg: string, to?: string) =>
      logged(`${msg} ${to ?? ''}`, (l) => l.msg === msg && l.node === 'node-1' && (!to || l.to === to)).then(
        (l) => Number(l.time),
      );
    const afterReboot = await at('phase', Phase.afterReboot);
    const done = await at('completed');
    // The soak's clock starts in the pass that saw the node back, a few ms before that pass's phase line
    // is logged (CI measured 3995 ms); a soak counted while the operator was stopped would be about 0.
    assert.ok(
      done - afterReboot >= 3900,
      `completed ${done - afterReboot} ms after the operator saw it back: the 4 s soak is its own`,
    );
    await assertSafe(f);
  });
});
