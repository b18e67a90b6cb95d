/** `nuo release NODE --reason TEXT`: a person ends a Failed node's attempt and frees its slot. */
import { parseArgs } from 'node:util';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { Annotations } from '../api/keys.ts';
import { Phase } from '../api/phases.ts';
import { statusCode } from '../kube/errors.ts';
import { mergePatch } from '../kube/patch.ts';
import { viewNode } from '../operator/decide/node-view.ts';
import { mayBeRebooting } from '../operator/decide/step-context.ts';
import { type Command, err, out, UsageError } from './command.ts';
import { explainApiError, kubeconfigFrom, kubeFlags, singleNode } from './kube.ts';
import { usageText } from './usage.ts';
import { whoAmI } from './who-am-i.ts';

/** Why the node's attempt cannot be released now, or undefined when it can. Pure. */
export function releaseRefusal(node: V1Node): string | undefined {
  const state = node.metadata?.annotations?.[Annotations.state] ?? Phase.idle;
  if (state !== Phase.failed)
    return `it is ${state}, not Failed: only a Failed attempt is released by hand (every other phase ends by its own timeout)`;
  if (mayBeRebooting(viewNode(node)))
    return 'its agent marks reboot-in-progress, so it may be rebooting now; if the machine is gone for good, delete its Node object';
  return undefined;
}

export const releaseCommand: Command = {
  name: 'release',
  summary: "end a Failed node's attempt and free its slot (audited: a reason is required)",
  usage: usageText([
    'Usage: nuo release NODE --reason TEXT [flags]',
    '',
    `Asks the operator (${Annotations.release}) to end the attempt of a node in Failed: its grant`,
    "withdrawn, nuo's cordon undone, its slot of the budget freed; the node retries after its backoff.",
    'Refused while the agent marks reboot-in-progress on the boot it started from (the node may be',
    'rebooting now). The request names this Failed phase: one left behind frees nothing later. The reason,',
    "and who asked as the API server knows them, go in the node's reason and Events.",
    '',
    'Flags:',
    '  --reason TEXT   why (required: it is the record of who freed the slot and why)',
  ]),
  async run(argv) {
    const { positionals, values } = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { reason: { type: 'string' }, ...kubeFlags },
    });
    const node = singleNode(positionals);
    const reason = values.reason?.trim();
    if (!reason) throw new UsageError('--reason is required: say why the slot is freed');
    const kc = kubeconfigFrom(values);
    const core = kc.makeApiClient(CoreV1Api);
    try {
      const n = await core.readNode({ name: node });
      const annotations = n.metadata?.annotations ?? {};
      const refusal = releaseRefusal(n);
      if (refusal) {
        err(`error: cannot release node/${node}: ${refusal}`);
        return 1;
      }
      const request = {
        failedSince: annotations[Annotations.stateSince] ?? '',
        reason,
        by: await whoAmI(kc),
      };
      // Conditional on what was read: a node that left Failed meanwhile is not released.
      await core.patchNode(
        {
          name: node,
          body: {
            metadata: {
              resourceVersion: n.metadata?.resourceVersion,
              annotations: { [Annotations.release]: JSON.stringify(request) },
            },
          },
        },
        mergePatch,
      );
      out(`node/${node} release requested: the operator ends its Failed attempt and frees its slot`);
      return 0;
    } catch (e) {
      err(
        statusCode(e) === 404
          ? `Error from server (NotFound): nodes "${node}" not found`
          : statusCode(e) === 409
            ? `error: node/${node} changed while it was read; run nuo release again`
            : explainApiError(e, kc),
      );
      return 1;
    }
  },
};
