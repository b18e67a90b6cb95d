/** The usage text of the commands that talk to a cluster, and the flags of those that read the operator's state. */
import { DEFAULT_NAMESPACE } from '../api/keys.ts';
import { kubeFlags, kubeFlagsUsage } from './kube.ts';
import { sucPlansFlag, sucPlansUsage } from './plans.ts';

/** A command's usage text: `lines` (its synopsis, what it does, its flags), then the kubeconfig flags. */
export function usageText(lines: readonly string[]): string {
  return [...lines, ...kubeFlagsUsage].join('\n');
}

/** The usage text of a command that takes one NODE and only the kubeconfig flags. */
export function nodeCommandUsage(name: string, ...explain: string[]): string {
  return usageText([`Usage: nuo ${name} NODE [flags]`, '', ...explain, '', 'Flags:']);
}

/** The flags of a command that reads what the operator keeps: its namespace, SUC's Plans, the kubeconfig. */
export const stateFlags = {
  namespace: { type: 'string', default: DEFAULT_NAMESPACE },
  ...sucPlansFlag,
  ...kubeFlags,
} as const;

/**
 * The usage text of a command that takes `stateFlags`: `lines`, then those flags, the namespace's help at
 * `column` (where the command's own flags' help starts).
 */
export function stateUsage(lines: readonly string[], column = 19): string {
  return usageText([
    ...lines,
    `${'  --namespace NS'.padEnd(column)}where the operator keeps its ledger and lease (default ${DEFAULT_NAMESPACE})`,
    sucPlansUsage,
  ]);
}
