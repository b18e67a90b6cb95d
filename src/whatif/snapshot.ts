/**
 * A snapshot: the objects of a cluster that decide how a rollout goes, by kind, whether read from the
 * API server (read-cluster.ts) or from files (parse.ts). Both feed raw objects to one collector, so a
 * `kubectl get -A -o yaml` dump is checked and cut down exactly as a live read is.
 */
import { stringify } from 'yaml';
import {
  keepNamespace,
  keepNode,
  keepPdb,
  keepPlan,
  keepPod,
  keepPriorityClass,
  keepUpdatePolicy,
  keepWorkload,
} from './keep.ts';
import {
  type NamespaceObject,
  type NodeObject,
  objectName,
  type PdbObject,
  type PlanObject,
  type PodObject,
  type PriorityClassObject,
  type SnapshotObject,
  type UpdatePolicyObject,
  WORKLOAD_KINDS,
  type WorkloadObject,
} from './objects.ts';
import { ItemError, isRaw, type Raw } from './raw.ts';

export interface Snapshot {
  nodes: NodeObject[];
  namespaces: NamespaceObject[];
  priorityClasses: PriorityClassObject[];
  pods: PodObject[];
  /** Deployments, ReplicaSets, StatefulSets, DaemonSets and Jobs. */
  workloads: WorkloadObject[];
  pdbs: PdbObject[];
  updatePolicies: UpdatePolicyObject[];
  plans: PlanObject[];
}

const emptySnapshot = (): Snapshot => ({
  nodes: [],
  namespaces: [],
  priorityClasses: [],
  pods: [],
  workloads: [],
  pdbs: [],
  updatePolicies: [],
  plans: [],
});

/** A kind a snapshot holds: its API group, and how one object is checked and kept. */
interface KindEntry {
  group: string;
  keep: (raw: Raw) => SnapshotObject;
  add: (s: Snapshot, o: SnapshotObject) => void;
}

const KINDS: Record<string, KindEntry> = {
  Node: { group: '', keep: keepNode, add: (s, o) => s.nodes.push(o as NodeObject) },
  Namespace: { group: '', keep: keepNamespace, add: (s, o) => s.namespaces.push(o as NamespaceObject) },
  PriorityClass: {
    group: 'scheduling.k8s.io',
    keep: keepPriorityClass,
    add: (s, o) => s.priorityClasses.push(o as PriorityClassObject),
  },
  Pod: { group: '', keep: keepPod, add: (s, o) => s.pods.push(o as PodObject) },
  ...Object.fromEntries(
    WORKLOAD_KINDS.map((kind) => [
      kind,
      {
        group: kind === 'Job' ? 'batch' : 'apps',
        keep: (raw: Raw) => keepWorkload(kind, raw),
        add: (s: Snapshot, o: SnapshotObject) => s.workloads.push(o as WorkloadObject),
      },
    ]),
  ),
  PodDisruptionBudget: { group: 'policy', keep: keepPdb, add: (s, o) => s.pdbs.push(o as PdbObject) },
  UpdatePolicy: {
    group: 'nuo.dev',
    keep: keepUpdatePolicy,
    add: (s, o) => s.updatePolicies.push(o as UpdatePolicyObject),
  },
  Plan: { group: 'nuo.dev', keep: keepPlan, add: (s, o) => s.plans.push(o as PlanObject) },
};

/** Kinds whose objects are never kept, whatever a file holds: their data is secret or arbitrary. */
const NEVER_READ = new Set(['Secret', 'ConfigMap']);

/** Objects more than this make the input refused: ten times the 50,000 pods a snapshot is built for. */
export const MAX_OBJECTS = 500_000;
/** Errors listed in one message; the rest are counted. */
const MAX_ERRORS_SHOWN = 20;

const groupOf = (apiVersion: string) => (apiVersion.includes('/') ? (apiVersion.split('/')[0] ?? '') : '');

/** Thrown by finish() when any object could not be kept: every reason, each naming its file and item. */
export class SnapshotError extends Error {}

/**
 * Collects raw objects into a Snapshot: each known kind checked and cut down (keep.ts), Secrets and
 * ConfigMaps dropped unread, other kinds ignored, both reported in `notes`; duplicates and bad objects are
 * errors, all reported at once by finish().
 */
export class SnapshotCollector {
  readonly #snapshot = emptySnapshot();
  readonly #errors: string[] = [];
  readonly #seen = new Set<string>();
  readonly #ignored = new Map<string, number>();
  readonly #neverRead = new Map<string, number>();
  #count = 0;

  /** `where` names the object's place for messages ("cluster.yaml: item 12"). */
  add(raw: unknown, where: string): void {
    if (++this.#count > MAX_OBJECTS)
      throw new SnapshotError(
        `more than ${MAX_OBJECTS} objects (at ${where}): a snapshot holds nodes, pods and their owners; leave out other kinds`,
      );
    if (!isRaw(raw)) {
      this.#errors.push(`${where}: not an object`);
      return;
    }
    const kind = typeof raw.kind === 'string' ? raw.kind : '';
    const apiVersion = typeof raw.apiVersion === 'string' ? raw.apiVersion : '';
    if (!kind || !apiVersion) {
      this.#errors.push(
        `${where}: no ${kind ? 'apiVersion' : 'kind'} (every object needs apiVersion and kind)`,
      );
      return;
    }
    const group = groupOf(apiVersion);
    if (NEVER_READ.has(kind) && group === '') {
      this.#neverRead.set(kind, (this.#neverRead.get(kind) ?? 0) + 1);
      return;
    }
    const entry = KINDS[kind];
    if (!entry || entry.group !== group) {
      const key = `${kind} (${apiVersion})`;
      this.#ignored.set(key, (this.#ignored.get(key) ?? 0) + 1);
      return;
    }
    let kept: SnapshotObject;
    try {
      kept = entry.keep(raw);
    } catch (err) {
      if (!(err instanceof ItemError)) throw err;
      const name =
        isRaw(raw.metadata) && typeof raw.metadata.name === 'string' ? ` ${raw.metadata.name}` : '';
      this.#errors.push(`${where} (${kind}${name}): ${err.message}`);
      return;
    }
    const key = `${kind} ${objectName(kept.metadata)}`;
    if (this.#seen.has(key)) {
      this.#errors.push(`${where}: ${key} appears twice`);
      return;
    }
    this.#seen.add(key);
    entry.add(this.#snapshot, kept);
  }

  /** An input that held no objects to add (a file that does not parse), reported with the rest. */
  fail(where: string, message: string): void {
    this.#errors.push(`${where}: ${message}`);
  }

  /** What was left out, for the person who made the input: one line per kind. */
  notes(): string[] {
    const lines = [...this.#neverRead].map(
      ([kind, n]) =>
        `${n} ${kind}${n === 1 ? '' : 's'} dropped unread: a snapshot never keeps Secrets or ConfigMaps`,
    );
    if (this.#ignored.size > 0)
      lines.push(
        `ignored (not part of a snapshot): ${[...this.#ignored].map(([k, n]) => `${n} ${k}`).join(', ')}`,
      );
    return lines;
  }

  /** The snapshot, or a SnapshotError listing every object that could not be kept. */
  finish(): Snapshot {
    if (this.#errors.length > 0) {
      const shown = this.#errors.slice(0, MAX_ERRORS_SHOWN);
      const more = this.#errors.length - shown.length;
      throw new SnapshotError(
        [
          `${this.#errors.length} object${this.#errors.length === 1 ? '' : 's'} could not be read:`,
          ...shown.map((e) => `  ${e}`),
          ...(more > 0 ? [`  … and ${more} more`] : []),
        ].join('\n'),
      );
    }
    return this.#snapshot;
  }
}

/** Every object of a snapshot, cluster-scoped kinds first, in the order a twin is built. */
function snapshotObjects(s: Snapshot): SnapshotObject[] {
  return [
    ...s.namespaces,
    ...s.priorityClasses,
    ...s.nodes,
    ...s.updatePolicies,
    ...s.plans,
    ...s.workloads,
    ...s.pdbs,
    ...s.pods,
  ];
}

/** How much a snapshot holds, for a summary line. */
export function snapshotCounts(s: Snapshot): string {
  return [
    `${s.nodes.length} nodes`,
    `${s.pods.length} pods`,
    `${s.workloads.length} owners`,
    `${s.pdbs.length} PDBs`,
    `${s.priorityClasses.length} PriorityClasses`,
    `${s.namespaces.length} namespaces`,
    `${s.updatePolicies.length} UpdatePolicies`,
    `${s.plans.length} Plans`,
  ].join(', ');
}

/**
 * The snapshot as one `kind: List` document, YAML (with a comment saying what it is) or JSON. YAML is
 * written item by item, entries at column 0 as kubectl writes them: the YAML library's memory grows with
 * what it is given at once, and a List of 50,000 pods given whole would not fit.
 */
export function formatSnapshot(s: Snapshot, format: 'yaml' | 'json', header: readonly string[] = []): string {
  const items = snapshotObjects(s);
  if (format === 'json')
    return `${JSON.stringify({ apiVersion: 'v1', kind: 'List', metadata: {}, items }, null, 1)}\n`;
  const parts = [...header.map((line) => `# ${line}\n`), 'apiVersion: v1\nkind: List\nmetadata: {}\n'];
  parts.push(items.length === 0 ? 'items: []\n' : 'items:\n');
  for (const item of items) {
    const text = stringify(item, { aliasDuplicateObjects: false, lineWidth: 0 });
    parts.push(`- ${text.trimEnd().replaceAll('\n', '\n  ')}\n`);
  }
  return parts.join('');
}
