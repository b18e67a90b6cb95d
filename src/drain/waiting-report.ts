/**
 * What a drain waits on, said while it waits: the pods it waits for (drain.waitFor) and, once PDBs keep
 * refusing, what holds each PDB (pdb-hold.ts words it), joined into one `waiting` event when it changes.
 */
import type { CoreV1Api, PolicyV1Api } from '@kubernetes/client-node';
import { sleep } from '../kube/backoff.ts';
import { describeError } from '../kube/errors.ts';
import { selectorText } from '../kube/selector.ts';
import type { DrainOptions } from './options.ts';
import { pdbHold } from './pdb-hold.ts';
import type { DrainEvent, ProgressTracker } from './progress.ts';

/** How long PDBs may refuse before the drain says what holds them, and how often it looks again. */
const WAITING_REPORT_MAX_MS = 30_000;

/** Joins what the drain waits on (its pods waited for, the PDBs holding it) into one `waiting` event when that changes. */
export interface WaitingReport {
  pods(lines: string[]): void;
  pdbs(lines: string[]): void;
}

export function waitingReport(emit: (e: DrainEvent) => void): WaitingReport {
  let pods: string[] = [];
  let pdbs: string[] = [];
  let last = '';
  const say = () => {
    const holds = [...pods, ...pdbs];
    const text = holds.join('; ');
    if (text !== last && holds.length > 0) emit({ type: 'waiting', holds, blocked: pdbs.length > 0 });
    last = text;
  };
  return {
    pods: (lines) => {
      pods = lines;
      say();
    },
    pdbs: (lines) => {
      pdbs = lines;
      say();
    },
  };
}

/** The clients that read a PDB and the pods it covers. */
export interface PdbReads {
  core: CoreV1Api;
  policy: PolicyV1Api;
}

/**
 * While PDBs keep refusing, says what holds them: first after a quarter of the timeout (at most 30 s,
 * so that a refusal a replacement soon answers goes unreported), then at that interval when it changed.
 */
export async function reportWaiting(
  reads: PdbReads,
  node: string,
  tracker: ProgressTracker,
  options: DrainOptions,
  signal: AbortSignal,
  report: WaitingReport,
): Promise<void> {
  const quarter = options.timeoutSeconds > 0 ? (options.timeoutSeconds * 1000) / 4 : WAITING_REPORT_MAX_MS;
  const every = Math.min(quarter, WAITING_REPORT_MAX_MS);
  for (;;) {
    await sleep(every, signal);
    if (signal.aborted) return;
    const blocking = Object.keys(tracker.progress().blockingPdbs);
    if (blocking.length === 0) continue;
    const holds = await pdbHolds(reads, node, blocking);
    if (signal.aborted) return;
    report.pdbs(holds);
  }
}

/** Each PDB read as it stands now, with its pods: what holds it (a read that fails says so instead). */
export async function pdbHolds(reads: PdbReads, node: string, keys: string[]): Promise<string[]> {
  return Promise.all(
    keys.map(async (key) => {
      const [namespace, name] = key.split('/') as [string, string];
      try {
        const list = await reads.policy.listNamespacedPodDisruptionBudget({
          namespace,
          fieldSelector: `metadata.name=${name}`,
        });
        const pdb = list.items[0];
        if (!pdb) return `${key}: gone since it refused the eviction`;
        const selector = pdb.spec?.selector;
        const pods = selector
          ? (await reads.core.listNamespacedPod({ namespace, labelSelector: selectorText(selector) })).items
          : [];
        return pdbHold({ key, pdb, pods }, node);
      } catch (err) {
        return `${key}: could not be read to say why (${describeError(err)})`;
      }
    }),
  );
}
