/**
 * Cordon and uncordon that undo only nuo's own cordon. The cordon and its `cordoned-by-nuo` record are
 * one conditional write (resourceVersion), so the record can never disagree with what nuo changed.
 */
import type { CoreV1Api, V1Node, V1Taint } from '@kubernetes/client-node';
import { Annotations } from '../api/keys.ts';
import { statusCode } from '../kube/errors.ts';
import { mergePatch } from '../kube/patch.ts';

const MAX_CONFLICTS = 10;

export interface CordonResult {
  /** True when this call made the node unschedulable (and recorded it); false if it already was. */
  changed: boolean;
  node: V1Node;
}

export const UncordonResult = {
  uncordoned: 'uncordoned',
  /** Unschedulable, but not by nuo: an admin's cordon is never removed. */
  notOurs: 'not-ours',
  notCordoned: 'not-cordoned',
} as const;
export type UncordonResult = (typeof UncordonResult)[keyof typeof UncordonResult];

/**
 * A decision on the node as read, and the node as it is after it (written, or as read). `known`, a recent
 * copy (a cache's), is decided on first, which saves a read: a stale copy costs a 409 and then a read,
 * and a decision on it to write nothing is confirmed on a read.
 */
async function conditionalPatch<R>(
  core: CoreV1Api,
  name: string,
  decide: (node: V1Node) => { patch: object; result: R } | { done: R },
  known?: V1Node,
): Promise<{ result: R; node: V1Node }> {
  let node = known ?? (await core.readNode({ name }));
  for (let attempt = 1; ; attempt++) {
    const next = decide(node);
    if ('done' in next) {
      if (node !== known) return { result: next.done, node };
      node = await core.readNode({ name });
      continue;
    }
    try {
      const body = {
        ...next.patch,
        metadata: {
          ...(next.patch as { metadata?: object }).metadata,
          resourceVersion: node.metadata?.resourceVersion,
        },
      };
      return { result: next.result, node: await core.patchNode({ name, body }, mergePatch) };
    } catch (err) {
      if (statusCode(err) !== 409 || attempt >= MAX_CONFLICTS) throw err;
    }
    node = await core.readNode({ name });
  }
}

export async function cordon(core: CoreV1Api, name: string): Promise<CordonResult> {
  const { result, node } = await conditionalPatch<boolean>(core, name, (node) => {
    if (node.spec?.unschedulable) return { done: false };
    return {
      patch: {
        metadata: { annotations: { [Annotations.cordonedByNuo]: 'true' } },
        spec: { unschedulable: true },
      },
      result: true,
    };
  });
  return { changed: result, node };
}

/** Metadata written together with an uncordon (the operator ends an attempt in the same write). */
export interface AlsoWrite {
  annotations?: Record<string, string | null>;
  labels?: Record<string, string | null>;
  /** The node's whole taint list to write (a merge patch replaces a list), computed from the node as read. */
  taints?: V1Taint[];
}

/**
 * Undoes nuo's own cordon, never an admin's. `also` (given the node as read) is written in the same
 * conditional write whatever the cordon: the operator's "attempt over" and the uncordon land together,
 * so no one ever sees an Idle node still cordoned by nuo, for one read and one write instead of two of
 * each (one write, given a `known` copy that is current). Returns the node as it is afterwards.
 */
export async function uncordonWith(
  core: CoreV1Api,
  name: string,
  also?: (node: V1Node) => AlsoWrite,
  known?: V1Node,
): Promise<{ result: UncordonResult; node: V1Node }> {
  return conditionalPatch<UncordonResult>(
    core,
    name,
    (node) => {
      const ours = node.metadata?.annotations?.[Annotations.cordonedByNuo] === 'true';
      const result: UncordonResult = ours
        ? UncordonResult.uncordoned
        : node.spec?.unschedulable
          ? UncordonResult.notOurs
          : UncordonResult.notCordoned;
      if (!ours && !also) return { done: result };
      const extra = also?.(node);
      const annotations = { ...extra?.annotations, ...(ours ? { [Annotations.cordonedByNuo]: null } : {}) };
      const spec = {
        ...(ours ? { unschedulable: false } : {}),
        ...(extra?.taints ? { taints: extra.taints } : {}),
      };
      return {
        patch: {
          metadata: { annotations, ...(extra?.labels ? { labels: extra.labels } : {}) },
          ...(Object.keys(spec).length ? { spec } : {}),
        },
        result,
      };
    },
    known,
  );
}

export async function uncordon(core: CoreV1Api, name: string): Promise<UncordonResult> {
  return (await uncordonWith(core, name)).result;
}
