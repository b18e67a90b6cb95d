/**
 * Cordon and uncordon that undo only nuo's own cordon. The cordon and its `cordoned-by-nuo` record are
 * one conditional write (resourceVersion), so the record can never disagree with what nuo changed.
 */
import type { CoreV1Api, V1Node } from '@kubernetes/client-node';
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

async function conditionalPatch(
  core: CoreV1Api,
  name: string,
  decide: (node: V1Node) => { patch: object; result: unknown } | { done: unknown },
): Promise<unknown> {
  for (let attempt = 1; ; attempt++) {
    const node = await core.readNode({ name });
    const next = decide(node);
    if ('done' in next) return next.done;
    try {
      const body = {
        ...next.patch,
        metadata: {
          ...(next.patch as { metadata?: object }).metadata,
          resourceVersion: node.metadata?.resourceVersion,
        },
      };
      await core.patchNode({ name, body }, mergePatch);
      return next.result;
    } catch (err) {
      if (statusCode(err) !== 409 || attempt >= MAX_CONFLICTS) throw err;
    }
  }
}

export async function cordon(core: CoreV1Api, name: string): Promise<CordonResult> {
  let patched: V1Node | undefined;
  const changed = await conditionalPatch(core, name, (node) => {
    patched = node;
    if (node.spec?.unschedulable) return { done: false };
    return {
      patch: {
        metadata: { annotations: { [Annotations.cordonedByNuo]: 'true' } },
        spec: { unschedulable: true },
      },
      result: true,
    };
  });
  return { changed: changed as boolean, node: patched as V1Node };
}

export async function uncordon(core: CoreV1Api, name: string): Promise<UncordonResult> {
  return (await conditionalPatch(core, name, (node) => {
    const ours = node.metadata?.annotations?.[Annotations.cordonedByNuo] === 'true';
    if (!ours)
      return { done: node.spec?.unschedulable ? UncordonResult.notOurs : UncordonResult.notCordoned };
    return {
      patch: {
        metadata: { annotations: { [Annotations.cordonedByNuo]: null } },
        spec: { unschedulable: false },
      },
      result: UncordonResult.uncordoned,
    };
  })) as UncordonResult;
}
