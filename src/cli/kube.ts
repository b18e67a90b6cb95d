/** What every command that talks to a cluster shares: --kubeconfig/--context and API error wording. */
import { parseArgs } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { loadKubeconfig } from '../kube/config.ts';
import { apiStatus, describeError, statusCode } from '../kube/errors.ts';
import type { PooledKubeConfig } from '../kube/pooled-kubeconfig.ts';
import { UsageError } from './command.ts';

export const kubeFlags = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
} as const;

export const kubeFlagsUsage = [
  '  --kubeconfig FILE   kubeconfig to use (default: $KUBECONFIG, then ~/.kube/config)',
  '  --context NAME      kubeconfig context to use',
];

export function kubeconfigFrom(values: { kubeconfig?: string; context?: string }): PooledKubeConfig {
  try {
    return loadKubeconfig(values);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** The one NODE a command acts on. */
export function singleNode(positionals: string[]): string {
  if (positionals.length !== 1) throw new UsageError(`expected exactly one NODE, got ${positionals.length}`);
  return positionals[0] as string;
}

/** Parses `NODE [--kubeconfig FILE] [--context NAME]`: the node, and the kubeconfig to reach it with. */
export function nodeCommandArgs(argv: string[]): { node: string; kc: KubeConfig } {
  const { values, positionals } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: true,
    options: kubeFlags,
  });
  const node = singleNode(positionals);
  return { node, kc: kubeconfigFrom(values) };
}

/** kubectl's wording for API failures, plus the server address when it cannot be reached at all. */
export function explainApiError(err: unknown, kc: KubeConfig): string {
  const code = statusCode(err);
  if (code === undefined)
    return `cannot reach the Kubernetes API at ${kc.getCurrentCluster()?.server}: ${describeError(err)}`;
  const status = apiStatus(err);
  return `Error from server (${status?.reason ?? code}): ${status?.message ?? describeError(err)}`;
}
