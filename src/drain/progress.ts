/**
 * Drain progress: per-pod state, pods left, and which PodDisruptionBudgets block — in a form that node
 * status, events, metrics and the CLI can all use.
 */
import { type DrainPlan, PodAction, type PodDecision } from './plan.ts';
import type { PodWait } from './wait-for.ts';

export const PodPhase = {
  /** Eviction not yet accepted. */
  pending: 'pending',
  /** Eviction accepted (or already terminating); waiting for the pod to be gone. */
  terminating: 'terminating',
  gone: 'gone',
  skipped: 'skipped',
  refused: 'refused',
  /** Left running: waited for until it finishes or its wait ends (waitFor). */
  waitingFor: 'waiting-for',
  /** A pod waited for finished (Succeeded or Failed): it holds nothing and stays. */
  finished: 'finished',
} as const;
export type PodPhase = (typeof PodPhase)[keyof typeof PodPhase];

export interface PodState {
  namespace: string;
  name: string;
  uid: string;
  action: PodAction;
  phase: PodPhase;
  /** The plan's reason, or the latest reason an eviction was refused. */
  reason?: string;
  /** "namespace/name" of the PDB that last refused this pod's eviction. */
  blockingPdb?: string;
  /** The pod's priority, when it has one (evictionTiers). */
  priority?: number;
  /** For a pod waited for: the rule and until when. */
  wait?: PodWait;
}

export interface DrainProgress {
  node: string;
  total: number;
  left: number;
  evicted: number;
  /** PDB → number of pods it currently holds back. */
  blockingPdbs: Record<string, number>;
  elapsedMs: number;
}

export type DrainEvent =
  | { type: 'cordoned'; node: string; changed: boolean }
  | { type: 'skip' | 'refuse'; pod: PodDecision }
  | { type: 'evicted'; pod: Pick<PodDecision, 'namespace' | 'name' | 'uid'> }
  | { type: 'gone'; pod: Pick<PodDecision, 'namespace' | 'name' | 'uid'> }
  /** A pod waited for finished, or its wait ended and it is evicted now (`reason` says which). */
  | { type: 'finished' | 'released'; pod: Pick<PodDecision, 'namespace' | 'name' | 'uid'>; reason: string }
  | {
      type: 'retry';
      pod: Pick<PodDecision, 'namespace' | 'name' | 'uid'>;
      reason: string;
      /** The API server answered 429: a PodDisruptionBudget allowed no disruption now. */
      refusedByPdb: boolean;
      retryInMs: number;
    }
  /**
   * What the drain waits on, sent again when that changes: the pods it waits for (at once, wait-for.ts)
   * and the PodDisruptionBudgets that have kept refusing evictions for a while, with what holds each and
   * what would unblock it (pdb-hold.ts; `blocked` when there are such).
   */
  | { type: 'waiting'; holds: string[]; blocked: boolean };

const PHASE_OF: Record<PodAction, PodPhase> = {
  evict: PodPhase.pending,
  wait: PodPhase.terminating,
  skip: PodPhase.skipped,
  refuse: PodPhase.refused,
  waitFor: PodPhase.waitingFor,
};

export class ProgressTracker {
  readonly #states = new Map<string, PodState>();
  readonly #node: string;
  readonly #started: number;
  readonly #onProgress: ((p: DrainProgress) => void) | undefined;
  readonly #onEvent: ((e: DrainEvent) => void) | undefined;
  #lastChange = Date.now();
  #wake: (() => void) | undefined;

  constructor(
    node: string,
    plan: DrainPlan,
    started: number,
    onProgress?: (p: DrainProgress) => void,
    onEvent?: (e: DrainEvent) => void,
  ) {
    this.#node = node;
    this.#started = started;
    this.#onProgress = onProgress;
    this.#onEvent = onEvent;
    for (const d of plan.decisions) {
      const phase = PHASE_OF[d.action];
      this.#states.set(d.uid, { ...d, phase });
    }
  }

  toEvict(): PodState[] {
    return [...this.#states.values()].filter((s) => s.phase === PodPhase.pending);
  }

  /** UIDs the drain still waits for (pending, terminating, or waited for to finish). */
  waitingUids(): string[] {
    return [...this.#states.values()]
      .filter(
        (s) =>
          s.phase === PodPhase.pending || s.phase === PodPhase.terminating || s.phase === PodPhase.waitingFor,
      )
      .map((s) => s.uid);
  }

  /** The pods left running until they finish or their wait ends. */
  waitedFor(): (PodState & { wait: PodWait })[] {
    return [...this.#states.values()].filter(
      (s): s is PodState & { wait: PodWait } => s.phase === PodPhase.waitingFor && s.wait !== undefined,
    );
  }

  /** A pod waited for (or not yet evicted) finished: nothing more to do with it. */
  finished(uid: string): void {
    const s = this.#states.get(uid);
    if (!s || (s.phase !== PodPhase.waitingFor && s.phase !== PodPhase.pending)) return;
    s.phase = PodPhase.finished;
    s.blockingPdb = undefined;
    s.reason = 'finished';
    this.#onEvent?.({ type: 'finished', pod: s, reason: s.reason });
    this.#changed();
  }

  /** A pod's wait ended under Evict: it is to be evicted now, as any other. */
  release(uid: string): PodState | undefined {
    const s = this.#states.get(uid);
    if (!s || s.phase !== PodPhase.waitingFor) return undefined;
    s.phase = PodPhase.pending;
    s.reason = `still running when its wait (${s.wait?.rule}) ended: evicted`;
    this.#onEvent?.({ type: 'released', pod: s, reason: s.reason });
    this.#changed();
    return s;
  }

  left(): number {
    return this.waitingUids().length;
  }

  /** Gone, finished, or no longer waited for (abandon): the drain expects nothing more of it. */
  isDone(uid: string): boolean {
    const phase = this.#states.get(uid)?.phase;
    return phase === PodPhase.gone || phase === PodPhase.skipped || phase === PodPhase.finished;
  }

  evicted(uid: string): void {
    const s = this.#states.get(uid);
    if (!s || s.phase !== PodPhase.pending) return;
    s.phase = PodPhase.terminating;
    s.blockingPdb = undefined;
    s.reason = undefined;
    this.#changed();
  }

  gone(uid: string): void {
    const s = this.#states.get(uid);
    const waited = s?.phase === PodPhase.pending || s?.phase === PodPhase.terminating;
    if (!s || !(waited || s.phase === PodPhase.waitingFor)) return;
    s.phase = PodPhase.gone;
    s.blockingPdb = undefined;
    this.#onEvent?.({ type: 'gone', pod: s });
    this.#changed();
  }

  /**
   * Stops waiting for a pod being deleted that is not gone (skipWaitForDeleteTimeout): it stays on the
   * node, counted as skipped.
   */
  abandon(uid: string, reason: string): void {
    const s = this.#states.get(uid);
    if (!s || s.phase !== PodPhase.terminating) return;
    s.phase = PodPhase.skipped;
    s.reason = reason;
    this.#onEvent?.({ type: 'skip', pod: s });
    this.#changed();
  }

  /** A pod to evict asked not to be disrupted now when read just before its eviction: it refuses. */
  refuse(uid: string, reason: string): void {
    const s = this.#states.get(uid);
    if (!s || s.phase !== PodPhase.pending) return;
    s.phase = PodPhase.refused;
    s.reason = reason;
    s.blockingPdb = undefined;
    this.#changed();
  }

  blocked(uid: string, reason: string, pdb: string | undefined): void {
    const s = this.#states.get(uid);
    if (!s || s.phase !== PodPhase.pending) return;
    s.reason = reason;
    s.blockingPdb = pdb;
    this.#report();
  }

  /** Resolves at the next state change. */
  changed(): Promise<void> {
    return new Promise((resolve) => {
      const previous = this.#wake;
      this.#wake = () => {
        previous?.();
        resolve();
      };
    });
  }

  sinceChangeMs(): number {
    return Date.now() - this.#lastChange;
  }

  progress(): DrainProgress {
    const states = [...this.#states.values()];
    const blockingPdbs: Record<string, number> = {};
    for (const s of states) {
      if (s.phase === PodPhase.pending && s.blockingPdb)
        blockingPdbs[s.blockingPdb] = (blockingPdbs[s.blockingPdb] ?? 0) + 1;
    }
    const counted = states.filter(
      (s) => s.action === PodAction.evict || s.action === PodAction.wait || s.action === PodAction.waitFor,
    );
    return {
      node: this.#node,
      total: counted.length,
      left: this.left(),
      evicted: counted.filter((s) => s.phase === PodPhase.gone || s.phase === PodPhase.terminating).length,
      blockingPdbs,
      elapsedMs: Date.now() - this.#started,
    };
  }

  result(): { pods: PodState[]; blockingPdbs: Record<string, string[]> } {
    const pods = [...this.#states.values()].map((s) => ({ ...s }));
    const blockingPdbs: Record<string, string[]> = {};
    for (const s of pods) {
      if (s.phase === PodPhase.pending && s.blockingPdb) {
        blockingPdbs[s.blockingPdb] = [...(blockingPdbs[s.blockingPdb] ?? []), `${s.namespace}/${s.name}`];
      }
    }
    return { pods, blockingPdbs };
  }

  summary(outcome: string): string {
    const p = this.progress();
    const seconds = (p.elapsedMs / 1000).toFixed(1);
    if (outcome === 'refused' || outcome === 'held') {
      const refused = [...this.#states.values()].filter((s) => s.phase === PodPhase.refused);
      const why = outcome === 'held' ? 'ask not to be disrupted now' : 'cannot be evicted with these options';
      return `${outcome}: ${refused.length} pod(s) ${why}: ${refused
        .map((s) => `${s.namespace}/${s.name}: ${s.reason}`)
        .join('; ')}`;
    }
    if (outcome === 'drained') return `drained ${p.total} pod(s) in ${seconds}s`;
    const pdbs = Object.entries(p.blockingPdbs).map(([pdb, n]) => `${pdb} (${n} pod(s))`);
    const running = this.waitedFor();
    const waiting = p.left - running.length - Object.values(p.blockingPdbs).reduce((a, b) => a + b, 0);
    return [
      `${outcome} after ${seconds}s with ${p.left} of ${p.total} pod(s) left`,
      pdbs.length ? `blocked by PodDisruptionBudget ${pdbs.join(', ')}` : '',
      waiting > 0 ? `${waiting} pod(s) not yet terminated` : '',
      running.length > 0
        ? `still waiting for ${running.map((r) => `${r.namespace}/${r.name} (${r.wait.rule})`).join(', ')} to finish`
        : '',
    ]
      .filter(Boolean)
      .join('; ');
  }

  #changed(): void {
    this.#lastChange = Date.now();
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
    this.#report();
  }

  #report(): void {
    this.#onProgress?.(this.progress());
  }
}
