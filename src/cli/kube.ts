/** What every command that talks to a cluster shares: --kubeconfig/--context and API error wording. */
import type { KubeConfig } from '@kubernetes/client-node';
import { loadKubeconfig } from '../kube/config.ts';
import { apiStatus, describeError, statusCode } from '../kube/errors.ts';
import { UsageError } from './command.ts';

export const kubeFlags = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
} as const;

export const kubeFlagsUsage = [
  '  --kubeconfig FILE   kubeconfig to use (default: $KUBECONFIG, then ~/.kube/config)',
  '  --context NAME      kubeconfig context to use',
];

export function kubeconfigFrom(values: { kubeconfig?: string; context?: string }): KubeConfig {
  try {
    return loadKubeconfig(values);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** kubectl's wording for API failures, plus the server address when it cannot be reached at all. */
export function explainApiError(err: unknown, kc: KubeConfig): string {
  const code = statusCode(err);
  if (code === undefined)
    return `cannot reach the Kubernetes API at ${kc.getCurrentCluster()?.server}: ${describeError(err)}`;
  const status = apiStatus(err);
  return `Error from server (${status?.reason ?? code}): ${status?.message ?? describeError(err)}`;
}
