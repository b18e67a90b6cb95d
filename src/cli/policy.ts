/**
 * `nuo policy explain NODE`: which pool holds a node and everything that keeps it waiting now;
 * `nuo policy resume NAME`: lets a pool halted by its failure budget go on.
 */
import { parseArgs } from 'node:util';
import { explainNode } from '../operator/policies/explain.ts';
import { readClusterState } from './cluster-state.ts';
import { type Command, err, out, UsageError } from './command.ts';
import { explainApiError, kubeconfigFrom, singleNode } from './kube.ts';
import { sucPlansNamespace } from './plans.ts';
import { isNotFound, resumePolicy } from './policy-resume.ts';
import { stateFlags, stateUsage } from './usage.ts';

export const policyCommand: Command = {
  name: 'policy',
  summary:
    'explain which UpdatePolicy holds a node and every condition that keeps it waiting now; resume a halted one',
  usage: stateUsage([
    'Usage: nuo policy explain NODE [flags]',
    '       nuo policy resume NAME [flags]',
    '',
    'explain: which UpdatePolicy holds NODE and every condition that keeps it waiting now.',
    'resume:  let the pool of UpdatePolicy NAME, halted by its failure budget, go on: failed attempts',
    '         until now no longer count. Records when and who in its nuo.dev/resumed-at and -by.',
    '',
    'Flags:',
  ]),
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      options: stateFlags,
    });
    const [sub, ...rest] = positionals;
    if (sub === 'resume') return resume(rest, values);
    if (sub !== 'explain')
      throw new UsageError(
        sub
          ? `unknown subcommand "${sub}": use explain or resume`
          : 'missing subcommand: explain NODE or resume NAME',
      );
    const name = singleNode(rest);
    const kc = kubeconfigFrom(values);
    try {
      const now = new Date();
      const state = await readClusterState(kc, values.namespace, now, sucPlansNamespace(values));
      const node = state.nodes.find((n) => n.name === name);
      if (!node) throw new UsageError(`node "${name}" not found`);
      const pool = state.plan.pools.find((p) => p.nodes.some((n) => n.name === name));
      const decision = pool ? state.decisions.get(pool.name) : undefined;
      const lines = explainNode({
        node,
        plan: state.plan,
        ledger: state.ledger,
        now,
        ...(decision ? { decision } : {}),
      });
      out(`${name}:`);
      for (const line of lines) out(`  ${line}`);
      return 0;
    } catch (e) {
      if (e instanceof UsageError) throw e;
      err(explainApiError(e, kc));
      return 1;
    }
  },
};

async function resume(positionals: string[], flags: Parameters<typeof kubeconfigFrom>[0]): Promise<number> {
  if (positionals.length !== 1)
    throw new UsageError(`expected exactly one UpdatePolicy NAME, got ${positionals.length}`);
  const name = positionals[0] as string;
  const kc = kubeconfigFrom(flags);
  try {
    const { by, at } = await resumePolicy(kc, name, new Date());
    out(`updatepolicy/${name} resumed at ${at} by ${by}`);
    return 0;
  } catch (e) {
    err(
      isNotFound(e)
        ? `Error from server (NotFound): updatepolicies.nuo.dev "${name}" not found`
        : explainApiError(e, kc),
    );
    return 1;
  }
}
