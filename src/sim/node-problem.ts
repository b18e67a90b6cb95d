/**
 * A node condition as node-problem-detector writes it (its own type, e.g. `KernelDeadlock`, beside the
 * kubelet's), for tests and the chaos runner that play it: set since a given time, or removed.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import { strategicMergePatch } from '../kube/patch.ts';

export interface NodeProblem {
  type: string;
  /** When the condition turned True: a policy's remediation waits for it to be held `for` a while. */
  since: Date;
  reason?: string;
  message?: string;
}

/** Sets the condition True on the node's status; the kubelet's own conditions are left as they are. */
export const setNodeProblem = (core: CoreV1Api, node: string, p: NodeProblem) =>
  core.patchNodeStatus(
    {
      name: node,
      body: {
        status: {
          conditions: [
            {
              type: p.type,
              status: 'True',
              reason: p.reason ?? 'Test',
              ...(p.message ? { message: p.message } : {}),
              lastHeartbeatTime: new Date(),
              lastTransitionTime: p.since,
            },
          ],
        },
      },
    },
    strategicMergePatch,
  );

/** Removes the condition from the node's status (absent already: nothing changes). */
export const clearNodeProblem = (core: CoreV1Api, node: string, type: string) =>
  core.patchNodeStatus(
    { name: node, body: { status: { conditions: [{ type, $patch: 'delete' }] } } },
    strategicMergePatch,
  );
