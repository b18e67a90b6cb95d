/**
 * A rollout on the local cluster: simulated hosts for every node (agents included), operator processes
 * started as real `nuo operator` children (so tests can SIGKILL them), the independent checker, and Job
 * pods that reboot their node's host (job-reboots.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, existsSync, openSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api } from '@kubernetes/client-node';
import type { FluoPrefix } from '../../tools/fluo/build.ts';
import type { UpdatePolicySpec } from '../api/update-policy.ts';
import { kubeconfigCredentials } from '../kube/kubeconfig-credentials.ts';
import { LeanClient } from '../kube/lean-client.ts';
import { type Budget, type PlanBudget, SafetyChecker } from './checker.ts';
import type { GateSettings } from './checker-gates.ts';
import { KURED_DEFAULT_LOCK } from './checker-kured.ts';
import type { NodeGateSettings } from './checker-node-gates.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import { sampleProc } from './cluster/proc.ts';
import { killWithHarness } from './cluster/process.ts';
import { FluoAgents } from './fluo-agent.ts';
import { type HostAgent, type RebootBehaviour, SimHost } from './host.ts';
import { JobReboots } from './job-reboots.ts';
import { KuredAgents, type KuredAgentsOptions } from './kured-agent.ts';
import { applyPlan, installPlanCrd, type PlanObject } from './plans.ts';
import { applyPolicy, installPolicyCrd } from './policies.ts';
import { diagnose, diagnosisFlags } from './runaway.ts';

/** The name of the UpdatePolicy a fleet applies unless told another (Fleet.applyPolicy). */
export const FLEET_POLICY = 'fleet';

const nuoBin = fileURLToPath(new URL('../../bin/nuo.js', import.meta.url));

/** The V8 flags deploy/base/operator.yaml gives the operator (NODE_OPTIONS); a test checks they agree. */
export const OPERATOR_NODE_OPTIONS = '--max-semi-space-size=2 --max-old-space-size=384';

/**
 * Resident memory past which an operator is a runaway: its V8 heap is capped at 384 MiB, so only native
 * memory leaking or looping can grow this far. The guard kills such a process before it takes the
 * machine's memory, and first logs where it was (runaway.ts).
 */
const RUNAWAY_RSS_MIB = 1024;
const RSS_CHECK_MS = 1000;
/** How long an operator may take to exit after SIGTERM (the kubelet's default grace is 30 s). */
const TERM_GRACE_MS = 15_000;

/** Debian's libfaketime: the library that shifts the wall clock of the process it is preloaded into. */
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

/**
 * The environment of a process whose wall clock is off by `skewS` seconds, or by the offset `clockFile`
 * holds (read again at most every second, so a write steps the running process's clock); its monotonic
 * clock is left alone, as NTP would leave it.
 */
function skewedEnv(clock: { skewS: number } | { clockFile: string }): NodeJS.ProcessEnv {
  if (!existsSync(LIBFAKETIME)) {
    throw new Error(
      `${LIBFAKETIME} is missing: install Debian's faketime package (apt-get install faketime)`,
    );
  }
  return {
    ...process.env,
    LD_PRELOAD: LIBFAKETIME,
    // An offset in seconds: "+300" or "-300".
    ...('skewS' in clock
      ? { FAKETIME: clockOffset(clock.skewS) }
      : { FAKETIME_TIMESTAMP_FILE: clock.clockFile, FAKETIME_CACHE_DURATION: '1' }),
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  };
}

/** An offset as libfaketime reads it: "+300" or "-300" seconds. */
export const clockOffset = (skewS: number) => `${skewS >= 0 ? '+' : ''}${skewS}`;

/**
 * Sets the offset a clock file holds (FleetOptions' startOperator `clockFile`): written whole, then
 * renamed into place, so a process never reads half of it.
 */
export function writeClockFile(path: string, skewS: number): void {
  writeFileSync(`${path}.tmp`, `${clockOffset(skewS)}\n`);
  renameSync(`${path}.tmp`, path);
}

export interface FleetOptions {
  rebootMs: number;
  /** Per-node reboot durations overriding `rebootMs` (the chaos runner delays some reboots). */
  rebootMsByNode?: Record<string, number>;
  /** The budget the checker holds nuo to: one over every node, or each pool's (UpdatePolicies). */
  budget: number | Budget[];
  /** Plans the checker holds to a concurrency of their own (CheckerOptions.plans). */
  plans?: PlanBudget[];
  /** A policy's gates the checker holds to their rules (CheckerOptions.gates). */
  gates?: GateSettings;
  /** The pools' retry backoff and loop limit the checker holds each admission to (CheckerOptions.nodeGates). */
  nodeGates?: NodeGateSettings;
  agentCheckIntervalMs?: number;
  /**
   * The agents' reportSpreadMs (default 0: at once). Tests stage an update and look at what follows at
   * once; the benchmarks pass the agent's own default, which is what a fleet runs.
   */
  agentReportSpreadMs?: number;
  behaviours?: Record<string, RebootBehaviour>;
  /** When named hosts' current boot began, as their agents report it (default: when the fleet starts). */
  bootedAt?: Record<string, Date>;
  /**
   * Nodes whose hosts run FLUO's real update-agent instead of nuo's (fluo-agent.ts): it speaks FLUO's
   * protocol, and reboots through the host's logind when its node's reboot-ok annotation says so.
   */
  fluoNodes?: string[];
  /** The keys those agents speak: FLUO's own (the default), or CLUO's (FLUO's agent built with its prefix). */
  fluoPrefix?: FluoPrefix;
  /**
   * Nodes whose hosts run kured 1.23.0 instead of nuo's agent (kured-agent.ts): it reboots its node when
   * the host needs it and it holds kured's lock. `kured`: its settings (period, further flags).
   */
  kuredNodes?: string[];
  kured?: Omit<KuredAgentsOptions, 'log'>;
  /**
   * The nodes the fleet plays (default: every node the cluster has as it starts). Others, such as VM
   * nodes, are real machines with a kubelet and an agent of their own; the fleet's checker watches them
   * all the same.
   */
  nodes?: string[];
  /** Nodes whose agent is another given one (e.g. protocol-agent.ts playing CLUO's), in the place of nuo's. */
  agents?: Record<string, HostAgent>;
  /**
   * The hosts' kubelets: how long after a boot each first posts its status (SimHostOptions.kubeletLagMs)
   * and how often it posts while nothing changes (kubeletReportMs); default the host's.
   */
  kubelet?: { lagMs?: number; reportMs?: number };
  /** Resident memory at which an operator is killed as a runaway (default RUNAWAY_RSS_MIB). */
  runawayRssMiB?: number;
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
}

export class Fleet {
  readonly hosts = new Map<string, SimHost>();
  /** FLUO's agents, when `fluoNodes` names any: `fluo.nodes.get(node)` has a node's update_engine and logind. */
  fluo: FluoAgents | undefined;
  /** kured's daemons, when `kuredNodes` names any: `kured.nodes.get(node)` has a node's kured. */
  kured: KuredAgents | undefined;
  readonly checker: SafetyChecker;
  readonly #cluster: LocalCluster;
  #unregister: (() => void) | undefined;
  #stopping: Promise<void> | undefined;
  readonly #client: LeanClient;
  readonly #operators = new Map<string, ChildProcess>();
  readonly #jobReboots: JobReboots;
  /**
   * One line per operator the fleet had to kill: past its memory limit (where it was is in its log), or
   * still running long after SIGTERM.
   */
  readonly runaways: string[] = [];

  constructor(cluster: LocalCluster, options: FleetOptions) {
    this.#cluster = cluster;
    // One connection kept per simulated agent, as each real agent keeps its own.
    this.#client = new LeanClient(kubeconfigCredentials(cluster.kubeconfigPath), {
      idleSockets: Number.POSITIVE_INFINITY,
    });
    this.checker = new SafetyChecker(cluster.kubeconfig, options.budget, {
      plans: options.plans,
      ...(options.gates ? { gates: options.gates } : {}),
      ...(options.nodeGates ? { nodeGates: options.nodeGates } : {}),
      ...(options.kuredNodes?.length ? { kured: KURED_DEFAULT_LOCK } : {}),
    });
    const agentLog = join(cluster.dir, 'logs', 'agents.log');
    // Agents log beside the control plane's components, so a failing test shows them too.
    this.options = {
      log: (level, message) => appendFileSync(agentLog, `${new Date().toISOString()} ${level} ${message}\n`),
      ...options,
    };
    this.#jobReboots = new JobReboots(cluster.kubeconfig, (node, pod) => this.#rebootForJob(node, pod));
  }

  readonly options: FleetOptions;

  async start(): Promise<void> {
    this.#unregister = this.#cluster.beforeStop(() => this.stop());
    await this.checker.start();
    const core = this.#cluster.kubeconfig.makeApiClient(CoreV1Api);
    const all = (await core.listNode()).items.map((n) => n.metadata?.name ?? '');
    const nodes = this.options.nodes ?? all;
    const fluoNodes = this.options.fluoNodes ?? [];
    const kuredNodes = this.options.kuredNodes ?? [];
    const unknown = nodes
      .filter((n) => !all.includes(n))
      .concat([...fluoNodes, ...kuredNodes].filter((n) => !nodes.includes(n)));
    if (unknown.length > 0) {
      throw new Error(
        `the fleet's nodes, fluoNodes or kuredNodes name nodes it lacks: ${unknown.join(', ')}`,
      );
    }
    const fluo =
      fluoNodes.length > 0
        ? await FluoAgents.start(this.#cluster, {
            log: this.options.log,
            prefix: this.options.fluoPrefix ?? 'flatcar',
          })
        : undefined;
    this.fluo = fluo;
    const kured =
      kuredNodes.length > 0
        ? await KuredAgents.start(this.#cluster, { ...this.options.kured, log: this.options.log })
        : undefined;
    this.kured = kured;
    const agentOf = async (node: string): Promise<HostAgent | undefined> => {
      if (this.options.agents?.[node]) return this.options.agents[node];
      if (fluo && fluoNodes.includes(node)) return fluo.agentFor(node);
      if (kured && kuredNodes.includes(node)) return kured.agentFor(node);
      return undefined;
    };
    await Promise.all(
      nodes.map(async (nodeName) => {
        const host = new SimHost({
          nodeName,
          core,
          client: this.#client,
          rebootMs: this.options.rebootMsByNode?.[nodeName] ?? this.options.rebootMs,
          behaviour: this.options.behaviours?.[nodeName],
          bootedAt: this.options.bootedAt?.[nodeName],
          agentCheckIntervalMs: this.options.agentCheckIntervalMs,
          agentReportSpreadMs: this.options.agentReportSpreadMs,
          ...(this.options.kubelet?.lagMs === undefined ? {} : { kubeletLagMs: this.options.kubelet.lagMs }),
          ...(this.options.kubelet?.reportMs === undefined
            ? {}
            : { kubeletReportMs: this.options.kubelet.reportMs }),
          log: this.options.log,
          onReboot: (node, bootIdBefore) => this.checker.onReboot(node, bootIdBefore),
          agent: await agentOf(nodeName),
        });
        this.hosts.set(nodeName, host);
        await host.start();
      }),
    );
    await this.#jobReboots.start();
  }

  /** A Job's pod runs `reboot` on its node: the host goes down as for the agent's reboot, unless it is down. */
  #rebootForJob(node: string, pod: string): void {
    const host = this.hosts.get(node);
    const log = this.options.log;
    if (!host?.up)
      return void log?.('warn', `host ${node}: Job pod ${pod} asked for a reboot while it was down`);
    log?.('info', `host ${node}: Job pod ${pod} reboots it`);
    host.reboot().catch((err) => log?.('error', `host ${node}: reboot for Job pod ${pod}: ${err}`));
  }

  /** Creates or replaces a Plan (the CRD installed first if need be); like a policy, it outlives the fleet. */
  async applyPlan(plan: PlanObject): Promise<void> {
    await installPlanCrd(this.#cluster);
    await applyPlan(this.#cluster, plan);
  }

  /**
   * Creates or replaces an UpdatePolicy (the CRD installed first if need be): the operators' settings,
   * which their flags no longer carry. Without `spec.nodeSelector` it selects every node. It outlives the
   * fleet (stop() may come after the cluster's own): the next fleet's replaces it.
   */
  async applyPolicy(spec: UpdatePolicySpec, name = FLEET_POLICY): Promise<void> {
    await installPolicyCrd(this.#cluster);
    await applyPolicy(this.#cluster, name, spec);
  }

  /** Stages an OS update on the given nodes (all by default): each will need one reboot. */
  stageUpdates(nodes: string[] = [...this.hosts.keys()]): void {
    for (const n of nodes) {
      this.checker.allowReboots(n);
      this.hosts.get(n)?.stageUpdate();
    }
  }

  /**
   * Starts `nuo operator` as a child process; its log goes to the cluster's log directory. `clockSkewS`
   * runs it with its wall clock that many seconds off (Debian's libfaketime; the monotonic clock is left
   * alone, as NTP would leave it); `clockFile`, by the offset that file holds (writeClockFile), which may
   * change while it runs. `env` is added to the operator's environment. `nodeName`: the node of the fleet
   * it runs on, given as the downward API gives it (NODE_NAME); its drain evicts nothing of it.
   */
  startOperator(
    identity: string,
    args: string[],
    {
      clockSkewS,
      clockFile,
      env,
      nodeName,
    }: { clockSkewS?: number; clockFile?: string; env?: Record<string, string>; nodeName?: string } = {},
  ): ChildProcess {
    if (nodeName !== undefined && this.hosts.size > 0 && !this.hosts.has(nodeName)) {
      throw new Error(`startOperator ${identity}: the fleet has no node ${nodeName}`);
    }
    const logs = join(this.#cluster.dir, 'logs');
    const logPath = join(logs, `operator-${identity}.log`);
    const log = openSync(logPath, 'a');
    const report = `operator-${identity}-report.json`;
    // A NODE_NAME the test runner has (a CI pod's own) names no node of the fleet.
    const { NODE_NAME: _runnerNode, ...inherited } =
      clockFile !== undefined
        ? skewedEnv({ clockFile })
        : clockSkewS === undefined
          ? process.env
          : skewedEnv({ skewS: clockSkewS });
    const child = spawn(
      process.execPath,
      [
        ...OPERATOR_NODE_OPTIONS.split(' '),
        ...diagnosisFlags(logs, report),
        nuoBin,
        'operator',
        `--kubeconfig=${this.#cluster.kubeconfigPath}`,
        `--identity=${identity}`,
        '--metrics-port=0',
        '--namespace=nuo-system',
        ...args,
      ],
      {
        stdio: ['ignore', log, log],
        env: { ...inherited, ...(nodeName === undefined ? {} : { NODE_NAME: nodeName }), ...env },
      },
    );
    killWithHarness(child);
    this.#operators.set(identity, child);
    this.#guardMemory(identity, child, logPath, join(logs, report));
    return child;
  }

  #guardMemory(identity: string, child: ChildProcess, logPath: string, reportPath: string): void {
    const timer = setInterval(() => {
      const rss = sampleProc(child.pid)?.rssMiB ?? 0;
      if (rss <= (this.options.runawayRssMiB ?? RUNAWAY_RSS_MIB)) return;
      clearInterval(timer);
      const what = `operator ${identity} killed at ${Math.round(rss)} MiB resident, a runaway`;
      this.runaways.push(what);
      void diagnose(child, reportPath, logPath).then((where) => {
        child.kill('SIGKILL');
        appendFileSync(logPath, `\n=== fleet: ${what}\n${where}\n`);
      });
    }, RSS_CHECK_MS);
    timer.unref();
    child.once('exit', () => clearInterval(timer));
  }

  operator(identity: string): ChildProcess | undefined {
    return this.#operators.get(identity);
  }

  /**
   * Signals an operator and waits for it to exit. One that outlives a SIGTERM by TERM_GRACE_MS is
   * SIGKILLed, as the kubelet would, and recorded with the runaways: a process that hangs on shutdown.
   */
  async killOperator(identity: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.#operators.get(identity);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    // A stopped (SIGSTOPped) process would hold any other signal pending.
    child.kill('SIGCONT');
    if (signal !== 'SIGTERM') return void (await exited);
    const timer = setTimeout(() => {
      this.runaways.push(`operator ${identity} still running ${TERM_GRACE_MS / 1000}s after SIGTERM: killed`);
      child.kill('SIGKILL');
    }, TERM_GRACE_MS);
    await exited;
    clearTimeout(timer);
  }

  /** Stops everything the fleet started; once (the cluster's stop calls it too, if a test did not). */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    this.#unregister?.();
    await this.#jobReboots.stop();
    await Promise.all([...this.#operators.keys()].map((id) => this.killOperator(id, 'SIGTERM')));
    await Promise.all([...this.hosts.values()].map((h) => h.stop()));
    await this.fluo?.stop();
    await this.kured?.stop();
    await this.checker.stop();
    this.#client.close();
  }
}
