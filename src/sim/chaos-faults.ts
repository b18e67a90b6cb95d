/**
 * How each kind of fault of a chaos plan (chaos-plan.ts) strikes the running system: the operator
 * replicas, the control plane's processes, the simulated hosts, and a third client writing to nodes as
 * an admin, a careless controller or an attacker would. One function per kind; each tells the
 * independent checker what a person did on purpose (an admin's cordon), never what nuo did.
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { CoordinationV1Api, CoreV1Api, PolicyV1Api, V1Node } from '@kubernetes/client-node';
import { attemptOf, signGrant } from '../api/grant.ts';
import { Annotations, LEDGER } from '../api/keys.ts';
import { Phase } from '../api/phases.ts';
import { sleep } from '../kube/backoff.ts';
import { statusCode } from '../kube/errors.ts';
import { mergePatch, strategicMergePatch } from '../kube/patch.ts';
import { pollUntil } from '../util/poll.ts';
import { type Fault, FaultKind, Forgery } from './chaos-plan.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import type { Component } from './cluster/process.ts';
import type { Fleet } from './fleet.ts';
import type { SimHost } from './host.ts';

export const CHAOS_NAMESPACE = 'chaos';
export const OPERATOR_NAMESPACE = 'nuo-system';
export const LEASE = 'nuo-operator';
/** The workload's PDB (allows 1 disruption; a change-pdb fault sets 0 for a while). */
export const PDB = 'web';
/** Zone label the local cluster gives its nodes. */
const ZONE = 'topology.kubernetes.io/zone';

/** The operator replicas of one run: started, found by the Lease, claimed by one fault at a time. */
export interface Replicas {
  /** Starts a replica (its wall clock skewed by `clockSkewS`), returns its identity. */
  start(options?: { clockSkewS?: number }): string;
  /**
   * The live replica holding the Lease, claimed so no other fault picks it (release it when done);
   * undefined when none leads within 30 s.
   */
  claimLeader(): Promise<string | undefined>;
  release(identity: string): void;
  /**
   * Steps a running replica's wall clock by `stepS` seconds from where it is (its clock file); absent
   * when the replicas read no clock file.
   */
  stepClock?(identity: string, stepS: number): void;
}

export interface FaultContext {
  cluster: LocalCluster;
  core: CoreV1Api;
  coordination: CoordinationV1Api;
  policy: PolicyV1Api;
  fleet: Fleet;
  replicas: Replicas;
  /** Aborted when the run ends: faults still waiting give up. */
  signal: AbortSignal;
  /** One line about what was done, stamped by the runner. */
  note: (line: string) => void;
  /** The Prometheus a health check asks, and how old the operator's reading may be when it hangs. */
  healthRead?: { prometheus: Component; staleMs: number };
}

/** How long a third client keeps retrying a write through an API outage (a restart, a paused etcd). */
const PERSIST_MS = 60_000;

/**
 * Sends `call` until the API server answers it, as a person or a controller would retry through an
 * outage: network errors, 5xx and 429 are retried, and 404 too (a node another fault deleted is
 * registered again within seconds); any other answer is the call's.
 */
async function persist<T>(ctx: FaultContext, what: string, call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + PERSIST_MS;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      const code = statusCode(err);
      const transient = code === undefined || code >= 500 || code === 429 || code === 404;
      if (!transient || ctx.signal.aborted) throw err;
      if (Date.now() > deadline)
        throw new Error(`${what}: no answer within ${PERSIST_MS / 1000}s (${(err as Error).message})`);
      await sleep(200, ctx.signal);
    }
  }
}

/** Strikes `f`; resolves when the fault is over (a paused process resumed, a node re-registered). */
export async function strike(f: Fault, ctx: FaultContext): Promise<void> {
  switch (f.kind) {
    case FaultKind.killLeader:
      return killLeader(ctx);
    case FaultKind.restartAgent:
      return restartAgent(ctx, f.node, f.downMs);
    case FaultKind.restartApiserver:
      return restartComponent(ctx, 'kube-apiserver');
    case FaultKind.restartEtcd:
      return restartComponent(ctx, 'etcd');
    case FaultKind.pauseLeader:
      return pauseLeader(ctx, f.pauseMs);
    case FaultKind.pauseComponent:
      return pauseComponent(ctx, f.component, f.pauseMs);
    case FaultKind.skewClock:
      return skewClock(ctx, f.skewS);
    case FaultKind.adminCordon:
      return adminCordon(ctx, f.node, f.downMs);
    case FaultKind.deleteNode:
      return deleteNode(ctx, f.node, f.downMs);
    case FaultKind.hostileAnnotations:
      return hostileAnnotations(ctx, f.node, f.downMs);
    case FaultKind.forgeGrant:
      return forgeGrant(ctx, f.node, f.forgery);
    case FaultKind.changePdb:
      return changePdb(ctx, f.downMs);
    case FaultKind.stepClock:
      return stepClock(ctx, f.stepS);
    case FaultKind.kubeletLate:
      return kubeletLate(ctx, f.node, f.lateMs);
    case FaultKind.hangHealth:
      return hangHealth(ctx, f.pauseMs);
  }
}

async function leaderOrSkip(ctx: FaultContext): Promise<string> {
  const leader = await ctx.replicas.claimLeader();
  if (!leader) throw new Error('no live leader within 30 s'); // skipped, not injected
  return leader;
}

async function killLeader(ctx: FaultContext): Promise<void> {
  const leader = await leaderOrSkip(ctx);
  await ctx.fleet.killOperator(leader, 'SIGKILL');
  ctx.note(`SIGKILLed ${leader}; started ${ctx.replicas.start()}`);
}

async function restartAgent(ctx: FaultContext, node: string, downMs: number): Promise<void> {
  const host = ctx.fleet.hosts.get(node);
  if (!host) throw new Error(`no host ${node}`);
  await host.killAgent();
  await sleep(downMs, ctx.signal);
  const started = host.restartAgent();
  ctx.note(
    `${node}'s agent killed, ${started ? `restarted after ${downMs} ms` : 'not restarted: the host is down (its boot starts the agent)'}`,
  );
}

async function restartComponent(ctx: FaultContext, name: 'kube-apiserver' | 'etcd'): Promise<void> {
  const began = Date.now();
  await ctx.cluster.restart(name);
  ctx.note(`${name} healthy again after ${((Date.now() - began) / 1000).toFixed(1)}s`);
}

/** The leader hangs past its Lease (a GC pause, a frozen VM) and then resumes as if nothing happened. */
async function pauseLeader(ctx: FaultContext, pauseMs: number): Promise<void> {
  const leader = await leaderOrSkip(ctx);
  const child = ctx.fleet.operator(leader);
  try {
    child?.kill('SIGSTOP');
    await sleep(pauseMs, ctx.signal);
  } finally {
    child?.kill('SIGCONT');
    ctx.replicas.release(leader);
  }
  ctx.note(`${leader} stopped (SIGSTOP) for ${pauseMs} ms, then resumed`);
}

async function pauseComponent(
  ctx: FaultContext,
  name: 'kube-apiserver' | 'etcd',
  pauseMs: number,
): Promise<void> {
  const component = ctx.cluster.components[name];
  try {
    component.setPaused(true);
    await sleep(pauseMs, ctx.signal);
  } finally {
    component.setPaused(false);
  }
  ctx.note(`${name} stopped (SIGSTOP) for ${pauseMs} ms, then resumed`);
}

/** The leader dies; its replacement's wall clock is off by `skewS` (its monotonic clock is not). */
async function skewClock(ctx: FaultContext, skewS: number): Promise<void> {
  const leader = await leaderOrSkip(ctx);
  await ctx.fleet.killOperator(leader, 'SIGKILL');
  const replacement = ctx.replicas.start({ clockSkewS: skewS });
  ctx.note(`SIGKILLed ${leader}; started ${replacement} with its clock ${skewS > 0 ? '+' : ''}${skewS}s off`);
}

/** The leader's wall clock steps back while it leads (its monotonic clock runs on): NTP, a resumed VM. */
async function stepClock(ctx: FaultContext, stepS: number): Promise<void> {
  const step = ctx.replicas.stepClock;
  if (!step) throw new Error('the replicas read no clock file');
  const leader = await leaderOrSkip(ctx);
  try {
    step(leader, stepS);
  } finally {
    ctx.replicas.release(leader);
  }
  ctx.note(`${leader}'s wall clock stepped ${stepS}s while it leads`);
}

/** How long a late kubelet's host is waited for to reboot and post its new boot ID. */
const LATE_BOOT_MS = 300_000;

/**
 * The kubelet of a node's next boot posts the new boot ID `lateMs` after the host's agent or FleetLock
 * client started: `node`'s if its reboot is still ahead, else the first (by name) of those whose staged
 * reboot is. Resolves once that boot is posted, so the run is judged after it.
 */
async function kubeletLate(ctx: FaultContext, node: string, lateMs: number): Promise<void> {
  const ahead = (h: SimHost | undefined) => h?.up === true && h.needsReboot && h.reboots === 0;
  const planned = ctx.fleet.hosts.get(node);
  const host = ahead(planned)
    ? planned
    : [...ctx.fleet.hosts.values()].sort((a, b) => a.nodeName.localeCompare(b.nodeName)).find(ahead);
  if (!host) throw new Error(`no node with its reboot ahead (${node} rebooted already)`);
  const before = host.reboots;
  host.kubeletLate(lateMs);
  const posted = await pollUntil(
    `${host.nodeName} to reboot and post its new boot ID`,
    async () => {
      if (host.reboots === before) return undefined;
      const n = await ctx.core.readNode({ name: host.nodeName }).catch(() => undefined);
      return n?.status?.nodeInfo?.bootID === host.bootIdValue ? true : undefined;
    },
    { timeoutMs: LATE_BOOT_MS, intervalMs: 250, signal: ctx.signal },
  ).catch(() => false);
  ctx.note(
    `${host.nodeName}${host === planned ? '' : ` (in the place of ${node}, rebooted already)`}: its kubelet posts its next boot ID ${lateMs} ms late; ${posted ? 'posted' : 'no such boot before the run ended'}`,
  );
}

/**
 * The Prometheus the health check asks is stopped (SIGSTOP): its queries hang until they time out. The
 * checker holds the pool from then (past how old a reading may be) until just before it answers again.
 */
async function hangHealth(ctx: FaultContext, pauseMs: number): Promise<void> {
  const read = ctx.healthRead;
  const gates = ctx.fleet.checker.gates;
  if (!read || !gates) throw new Error('no Prometheus health check in this run');
  read.prometheus.setPaused(true);
  const end = gates.hold('health-check', `Prometheus stopped (SIGSTOP) for ${pauseMs} ms`, read.staleMs);
  try {
    await sleep(pauseMs, ctx.signal);
    await end();
  } finally {
    read.prometheus.setPaused(false);
  }
  ctx.note(`Prometheus stopped (SIGSTOP) for ${pauseMs} ms, then resumed`);
}

/**
 * `kubectl cordon`, then `kubectl uncordon` later, whatever nuo does meanwhile. The checker is told of
 * the cordon only when it made a schedulable node unschedulable (the cordon write is conditional on the
 * node as read, so nuo's cordon is never taken for the admin's), and of the uncordon before it is sent.
 */
async function adminCordon(ctx: FaultContext, node: string, downMs: number): Promise<void> {
  const checker = ctx.fleet.checker;
  /** The resourceVersion the admin's cordon wrote, once it landed. */
  let cordoned: string | undefined;
  for (let tries = 0; tries < 5 && cordoned === undefined; tries++) {
    const n = await persist(ctx, `read ${node}`, () => ctx.core.readNode({ name: node }));
    if (n.spec?.unschedulable) break;
    cordoned = await persist(ctx, `cordon ${node}`, () =>
      ctx.core.patchNode(
        {
          name: node,
          body: { metadata: { resourceVersion: n.metadata?.resourceVersion }, spec: { unschedulable: true } },
        },
        mergePatch,
      ),
    )
      .then((written) => written.metadata?.resourceVersion ?? '')
      .catch((err) => {
        if (statusCode(err) !== 409) throw err;
        return undefined;
      });
  }
  // Told once the cordon is written, with the version it wrote: a write that did not land must not be
  // taken for the admin's, and an uncordon of nuo's that the checker's watch delivers only now, from
  // before this cordon, did not undo it.
  if (cordoned !== undefined) checker.adminCordon(node, cordoned);
  await sleep(downMs, ctx.signal);
  checker.adminUncordon(node);
  await persist(ctx, `uncordon ${node}`, () =>
    ctx.core.patchNode({ name: node, body: { spec: { unschedulable: false } } }, mergePatch),
  );
  ctx.note(
    `${node} ${cordoned ? 'cordoned by an admin' : 'already unschedulable: the admin cordon changed nothing'}; uncordoned after ${downMs} ms`,
  );
}

const SLOT_PHASES: ReadonlySet<string> = new Set([Phase.beforeReboot, Phase.draining, Phase.afterReboot]);

/**
 * The Node object of a node in its attempt (up, not mid-reboot) is deleted, as a person or a cloud
 * controller removing it would; the machine's kubelet registers it again `downMs` later, without nuo's
 * keys, and its agent starts again. Waits up to 30 s for the node to be in such a phase, else strikes
 * whatever phase it is in outside a reboot.
 */
async function deleteNode(ctx: FaultContext, node: string, downMs: number): Promise<void> {
  const host = ctx.fleet.hosts.get(node);
  if (!host) throw new Error(`no host ${node}`);
  const phaseOf = (n: V1Node) => n.metadata?.annotations?.[Annotations.state] ?? '';
  const inSlot = await pollUntil(
    `${node} to hold a slot outside its reboot`,
    async () => {
      const n = await ctx.core.readNode({ name: node });
      return SLOT_PHASES.has(phaseOf(n)) && host.up ? n : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100, signal: ctx.signal },
  ).catch(() => undefined);
  const target =
    inSlot ??
    (await pollUntil(
      `${node} to be outside its reboot`,
      async () => {
        const n = await ctx.core.readNode({ name: node });
        const phase = phaseOf(n);
        return phase !== Phase.rebootGranted && phase !== Phase.rebooting && host.up ? n : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100, signal: ctx.signal },
    ));
  const zone = target.metadata?.labels?.[ZONE] ?? 'zone-a';
  await host.killAgent();
  await persist(ctx, `delete ${node}`, () => ctx.core.deleteNode({ name: node }));
  await sleep(downMs, ctx.signal);
  await persist(ctx, `register ${node}`, () => ctx.cluster.addNodes([{ name: node, zone }]));
  // A node registers again with the labels its kubelet is configured with: the chaos pools' among them.
  const own = Object.entries(target.metadata?.labels ?? {}).filter(([k]) => k.startsWith('chaos.nuo.dev/'));
  if (own.length > 0) {
    await persist(ctx, `label ${node}`, () =>
      ctx.core.patchNode({ name: node, body: { metadata: { labels: Object.fromEntries(own) } } }, mergePatch),
    );
  }
  await host.start();
  // KWOK may still be writing the new node's status when the host takes it over: publish the boot ID
  // until it shows, as a kubelet keeps its status.
  await pollUntil(
    `${node} to show its boot ID`,
    async () => {
      const n = await ctx.core.readNode({ name: node });
      if (n.status?.nodeInfo?.bootID === host.bootIdValue) return true;
      await host.publishBootId();
      return undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200, signal: ctx.signal },
  );
  // Its kubelet posts the machine ID it reads from /etc/machine-id (a FleetLock client is known by it).
  const machineID = target.status?.nodeInfo?.machineID;
  if (machineID)
    await persist(ctx, `machine ID of ${node}`, () =>
      ctx.core.patchNodeStatus(
        { name: node, body: { status: { nodeInfo: { machineID } } } },
        strategicMergePatch,
      ),
    );
  ctx.note(`${node} deleted in phase ${phaseOf(target) || '(none)'}, registered again after ${downMs} ms`);
}

/**
 * A third client writes values no nuo component would: garbage phase and counts, a 150 KB request, a
 * pause that is neither true nor false. A person removes the request and the pause after `downMs` (they
 * would stall the node forever by design: a malformed pause reads as paused); the rest is nuo's to fix.
 */
async function hostileAnnotations(ctx: FaultContext, node: string, downMs: number): Promise<void> {
  const huge = `junk-${'x'.repeat(150_000)}`;
  const annotate = (annotations: Record<string, string | null>) =>
    persist(ctx, `annotate ${node}`, () =>
      ctx.core.patchNode({ name: node, body: { metadata: { annotations } } }, mergePatch),
    );
  await annotate({
    [Annotations.state]: 'Garbage',
    [Annotations.failures]: 'abc',
    [Annotations.ineffectiveReboots]: '-7',
    [Annotations.rebootRequested]: huge,
    [Annotations.paused]: 'maybe',
  });
  await sleep(downMs, ctx.signal);
  await annotate({ [Annotations.rebootRequested]: null, [Annotations.paused]: null });
  ctx.note(
    `${node} given hostile values; the oversized request and the odd pause removed after ${downMs} ms`,
  );
}

/**
 * A reboot grant nuo did not give: the old boolean, a well-formed grant for this node, boot and attempt
 * signed with another key, or junk in the grant's format. The checker verifies every reboot's grant.
 */
async function forgeGrant(ctx: FaultContext, node: string, forgery: Forgery): Promise<void> {
  const n = await persist(ctx, `read ${node}`, () => ctx.core.readNode({ name: node }));
  // No ledger yet (404) is an answer: the forgery names an attempt of its own.
  const ledger = await ctx.core
    .readNamespacedConfigMap({ name: LEDGER.name, namespace: OPERATOR_NAMESPACE })
    .catch(() => undefined);
  const value = (() => {
    switch (forgery) {
      case Forgery.plain:
        return 'true';
      case Forgery.junk:
        return `v1.${Buffer.from(randomUUID()).toString('base64url')}.${Buffer.from(randomUUID()).toString('base64url')}`;
      case Forgery.otherKey:
        return signGrant(generateKeyPairSync('ed25519').privateKey, {
          node,
          bootId: n.status?.nodeInfo?.bootID ?? '',
          attempt: attemptOf(ledger?.data?.[LEDGER.key], node) ?? new Date().toISOString(),
        });
    }
  })();
  await persist(ctx, `forge a grant on ${node}`, () =>
    ctx.core.patchNode(
      { name: node, body: { metadata: { annotations: { [Annotations.rebootOk]: value } } } },
      mergePatch,
    ),
  );
  ctx.note(
    `${node} given a forged grant (${forgery}) in phase ${n.metadata?.annotations?.[Annotations.state] ?? '(none)'}`,
  );
}

/** The workload's owner tightens its PDB to allow nothing for a while (a deploy in progress), then 1 again. */
async function changePdb(ctx: FaultContext, downMs: number): Promise<void> {
  const set = (maxUnavailable: number) =>
    persist(ctx, `set PDB ${PDB} to ${maxUnavailable}`, () =>
      ctx.policy.patchNamespacedPodDisruptionBudget(
        { name: PDB, namespace: CHAOS_NAMESPACE, body: { spec: { maxUnavailable } } },
        mergePatch,
      ),
    );
  await set(0);
  try {
    await sleep(downMs, ctx.signal);
  } finally {
    await set(1);
  }
  ctx.note(`PDB ${PDB} allowed no disruption for ${downMs} ms`);
}
