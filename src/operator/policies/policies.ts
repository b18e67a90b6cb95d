/**
 * The cluster's UpdatePolicies as the operator uses them: watched, each generation resolved once
 * (policy/resolve.ts), and the last generation that resolved kept beside an invalid one, so a bad edit
 * never replaces a working policy with half of itself: its pool keeps stepping the attempts in progress
 * and admits nothing until the policy is fixed.
 * Without the CRD (an operator installed without it) the cluster has no policies; the list is tried
 * again with the informer's backoff, so installing the CRD later is noticed.
 */
import { CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, UPDATE_POLICY } from '../../api/crd.ts';
import { PolicyAnnotations } from '../../api/keys.ts';
import type { UpdatePolicy } from '../../api/update-policy.ts';
import type { KubeLog } from '../../kube/backoff.ts';
import { ResilientInformer } from '../../kube/informer.ts';
import type { PooledKubeConfig } from '../../kube/pooled-kubeconfig.ts';
import type { FieldError } from '../../policy/field-error.ts';
import { type ResolvedPolicy, resolvePolicy } from '../../policy/resolve.ts';
import { crdNotInstalled, listCustomPage } from '../read/custom-list.ts';

export interface PolicyEntry {
  name: string;
  uid: string;
  generation: number;
  /** The generation as it is now: usable, or why not (every problem, by field). */
  current: { ok: true; policy: ResolvedPolicy } | { ok: false; errors: FieldError[] };
  /** The newest generation that resolved (the current one when it does). */
  lastValid?: ResolvedPolicy;
  /** The status as last read (written only when it changes). */
  status?: UpdatePolicy['status'];
  /** The last `nuo policy resume` (its annotations); a time that does not parse is no resume. */
  resumed?: Resume;
}

export interface Resume {
  at: Date;
  by?: string;
}

/** The resume a policy's annotations record, if any. */
export function resumeOf(annotations: Record<string, string> | undefined): Resume | undefined {
  const at = new Date(annotations?.[PolicyAnnotations.resumedAt] ?? Number.NaN);
  if (Number.isNaN(at.getTime())) return undefined;
  const by = annotations?.[PolicyAnnotations.resumedBy];
  return { at, ...(by ? { by } : {}) };
}

export interface PolicyState {
  /** False until the first list answered (or showed that the CRD is not installed). */
  known: boolean;
  /** The CRD is not installed: no policies. */
  crdMissing: boolean;
  /** By name. */
  policies: PolicyEntry[];
}

export class PolicySource {
  readonly #informer: ResilientInformer<UpdatePolicy>;
  readonly #entries = new Map<string, PolicyEntry>();
  #crdMissing = false;
  #listed = false;
  readonly #changed: (() => void)[] = [];
  readonly #log: KubeLog;

  constructor(o: { kubeconfig: PooledKubeConfig; log: KubeLog }) {
    const api = o.kubeconfig.makeApiClient(CustomObjectsApi);
    this.#informer = new ResilientInformer<UpdatePolicy>({
      kubeconfig: o.kubeconfig,
      path: `/apis/${API_GROUP}/${API_VERSION}/${UPDATE_POLICY.plural}`,
      list: (opts) =>
        listCustomPage<UpdatePolicy>(api, { plural: UPDATE_POLICY.plural }, opts, (missing) =>
          this.#answered(missing),
        ),
      name: 'updatepolicies',
      expectedFailure: crdNotInstalled,
      log: o.log,
    });
    this.#log = o.log;
  }

  /** Calls `fn` when a policy's spec or generation, or its resume, changes (not for its own status writes). */
  onChange(fn: () => void): void {
    this.#changed.push(fn);
    this.#informer.onEvent((type, p, old) => {
      const resumed = (q: UpdatePolicy | undefined) => q?.metadata.annotations?.[PolicyAnnotations.resumedAt];
      if (
        type === 'update' &&
        old?.metadata.generation === p.metadata.generation &&
        resumed(old) === resumed(p)
      )
        return;
      fn();
    });
  }

  /** Starts watching in the background; the state is not known until the first list answers. */
  start(): void {
    this.#informer.start().catch(() => {});
  }

  stop(): Promise<void> {
    return this.#informer.stop();
  }

  state(): PolicyState {
    const known = this.#listed || this.#informer.stats().synced;
    const policies = this.#crdMissing ? [] : this.#informer.list().map((p) => this.#entry(p));
    const live = new Set(policies.map((p) => p.name));
    for (const name of this.#entries.keys()) if (!live.has(name)) this.#entries.delete(name);
    return {
      known,
      crdMissing: this.#crdMissing,
      policies: policies.sort((a, b) => (a.name < b.name ? -1 : 1)),
    };
  }

  /** A list answered: the first answer, and the CRD's coming or going, change what a pass sees. */
  #answered(crdMissing: boolean): void {
    const changed = !this.#listed || crdMissing !== this.#crdMissing;
    if (crdMissing && changed)
      this.#log(
        'warn',
        'the UpdatePolicy CRD is not installed: no node is touched until it is (kubectl apply -k deploy)',
      );
    else if (changed && this.#listed)
      this.#log('info', 'the UpdatePolicy CRD is installed: policies are read');
    this.#listed = true;
    this.#crdMissing = crdMissing;
    if (changed) for (const fn of this.#changed) fn();
  }

  /** The entry of a policy as cached: resolved once per generation. */
  #entry(p: UpdatePolicy): PolicyEntry {
    const name = p.metadata.name;
    const uid = p.metadata.uid ?? '';
    const generation = p.metadata.generation ?? 0;
    // A policy deleted and created again under its name is a new policy: nothing of the old one is kept.
    const known = this.#entries.get(name)?.uid === uid ? this.#entries.get(name) : undefined;
    const resumed = resumeOf(p.metadata.annotations);
    if (known?.generation === generation) {
      known.status = p.status;
      if (resumed) known.resumed = resumed;
      else delete known.resumed;
      return known;
    }
    const current = resolvePolicy(p);
    const lastValid = current.ok ? current.policy : known?.lastValid;
    const entry: PolicyEntry = {
      name,
      uid,
      generation,
      current,
      ...(lastValid ? { lastValid } : {}),
      ...(p.status ? { status: p.status } : {}),
      ...(resumed ? { resumed } : {}),
    };
    this.#entries.set(name, entry);
    return entry;
  }
}
