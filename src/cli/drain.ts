import { parseArgs } from 'node:util';
import { CoreV1Api } from '@kubernetes/client-node';
import { UncordonResult, uncordon } from '../drain/cordon.ts';
import { Drainer, DrainOutcome } from '../drain/evict.ts';
import type { DrainOptions } from '../drain/options.ts';
import { PodAction } from '../drain/plan.ts';
import type { DrainEvent } from '../drain/progress.ts';
import { parseDuration } from '../util/duration.ts';
import { positiveInt } from './args.ts';
import { type Command, err, out, UsageError } from './command.ts';
import {
  explainApiError,
  kubeconfigFrom,
  kubeFlags,
  kubeFlagsUsage,
  nodeCommandArgs,
  nodeCommandUsage,
  singleNode,
} from './kube.ts';

/** kubectl accepts --dry-run, --dry-run=client and --dry-run=none; nuo has no server-side dry run. */
function normaliseDryRun(argv: string[]): string[] {
  return argv.flatMap((arg) => {
    if (arg === '--dry-run=client') return ['--dry-run'];
    if (arg === '--dry-run=none') return [];
    if (arg.startsWith('--dry-run=')) {
      throw new UsageError(
        `${arg} is not supported: use --dry-run (a client-side dry run that writes nothing)`,
      );
    }
    return [arg];
  });
}

function integer(flag: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (!/^-?\d+$/.test(value) || Number(value) < min) {
    throw new UsageError(`--${flag} must be an integer ≥ ${min}, got "${value}"`);
  }
  return Number(value);
}

function printEvent(e: DrainEvent, dryRun: boolean): void {
  switch (e.type) {
    case 'cordoned':
      out(e.changed ? `node/${e.node} cordoned` : `node/${e.node} already cordoned`);
      return;
    case 'skip':
      out(`${dryRun ? '(dry run) ' : ''}skipping pod ${e.pod.namespace}/${e.pod.name}: ${e.pod.reason}`);
      return;
    case 'refuse':
      err(`cannot evict pod ${e.pod.namespace}/${e.pod.name}: ${e.pod.reason}`);
      return;
    case 'evicted':
      out(`evicting pod ${e.pod.namespace}/${e.pod.name}`);
      return;
    case 'gone':
      out(`pod/${e.pod.name} evicted`);
      return;
    case 'retry':
      err(
        `error when evicting pods/"${e.pod.name}" -n "${e.pod.namespace}" (will retry after ${(e.retryInMs / 1000).toFixed(2)}s): ${e.reason}`,
      );
      return;
    case 'waiting':
      err(`waiting on ${e.holds.join('; ')}`);
      return;
  }
}

export const drainCommand: Command = {
  name: 'drain',
  summary: 'cordon a node and evict its pods through the Eviction API (like kubectl drain, bounded)',
  usage: [
    'Usage: nuo drain NODE [flags]',
    '',
    'Cordons NODE (recording nuo.dev/cordoned-by-nuo only if nuo made it unschedulable), then evicts its',
    'pods in parallel, retrying evictions a PodDisruptionBudget refuses, until every pod is gone or the',
    "timeout passes. A failed drain leaves the node cordoned: `nuo uncordon NODE` undoes nuo's cordon.",
    '',
    'Flags (as kubectl drain):',
    '  --dry-run                        show what would be evicted; change nothing',
    '  --force                          evict pods that no controller manages',
    '  --ignore-daemonsets              leave DaemonSet-managed pods in place',
    '  --delete-emptydir-data           evict pods with emptyDir volumes (their data is lost)',
    '  --pod-selector SELECTOR          only evict pods matching this label selector',
    "  --grace-period SECONDS           termination grace period per pod (default -1: the pod's own)",
    "  --timeout DURATION               give up after this long (default 10m; 0s waits forever, as kubectl's default)",
    '  --skip-wait-for-delete-timeout N do not wait for pods deleted more than N seconds ago (default 0)',
    '  --disable-eviction               delete pods directly, bypassing PodDisruptionBudgets',
    '  --concurrency N                  evictions in flight at once (default 50)',
    ...kubeFlagsUsage,
  ].join('\n'),
  async run(argv) {
    const { positionals, values } = parseArgs({
      args: normaliseDryRun(argv),
      allowPositionals: true,
      strict: true,
      options: {
        'dry-run': { type: 'boolean', default: false },
        force: { type: 'boolean', default: false },
        'ignore-daemonsets': { type: 'boolean', default: false },
        'delete-emptydir-data': { type: 'boolean', default: false },
        'pod-selector': { type: 'string', default: '' },
        'grace-period': { type: 'string' },
        timeout: { type: 'string' },
        'skip-wait-for-delete-timeout': { type: 'string' },
        'disable-eviction': { type: 'boolean', default: false },
        concurrency: { type: 'string' },
        ...kubeFlags,
      },
    });
    const node = singleNode(positionals);
    let timeoutMs: number;
    try {
      timeoutMs = parseDuration(values.timeout ?? '10m');
    } catch (e) {
      throw new UsageError(`--timeout: ${(e as Error).message}`);
    }
    const options: Partial<DrainOptions> = {
      force: values.force,
      ignoreDaemonSets: values['ignore-daemonsets'],
      deleteEmptyDirData: values['delete-emptydir-data'],
      podSelector: values['pod-selector'],
      gracePeriodSeconds: integer('grace-period', values['grace-period'], -1, -1),
      timeoutSeconds: Math.ceil(timeoutMs / 1000),
      skipWaitForDeleteTimeoutSeconds: integer(
        'skip-wait-for-delete-timeout',
        values['skip-wait-for-delete-timeout'],
        0,
        0,
      ),
      disableEviction: values['disable-eviction'],
      concurrency: positiveInt('concurrency', values.concurrency, 50, 1),
    };
    const kc = kubeconfigFrom(values);
    const dryRun = values['dry-run'];
    const controller = new AbortController();
    const interrupt = () => controller.abort();
    process.once('SIGINT', interrupt);
    try {
      const result = await new Drainer(kc).drain({
        node,
        options,
        dryRun,
        signal: controller.signal,
        onEvent: (e) => printEvent(e, dryRun),
      });
      if (dryRun) {
        for (const d of result.plan.decisions) {
          if (d.action === PodAction.evict) out(`(dry run) evicting pod ${d.namespace}/${d.name}`);
        }
      }
      if (result.outcome === DrainOutcome.drained) {
        out(`node/${node} ${dryRun ? 'drained (dry run)' : 'drained'}`);
        return 0;
      }
      err(`error: unable to drain node "${node}": ${result.message}`);
      if (result.cordoned)
        err(`node/${node} stays cordoned; run "nuo uncordon ${node}" to undo nuo's cordon`);
      return 1;
    } catch (e) {
      err(explainApiError(e, kc));
      return 1;
    } finally {
      process.off('SIGINT', interrupt);
    }
  },
};

export const uncordonCommand: Command = {
  name: 'uncordon',
  summary: "undo nuo's cordon of a node (never an admin's)",
  usage: nodeCommandUsage(
    'uncordon',
    'Makes NODE schedulable again if nuo cordoned it (nuo.dev/cordoned-by-nuo=true). A node that someone',
    'else cordoned stays cordoned: use kubectl uncordon for that.',
  ),
  async run(argv) {
    const { node, kc } = nodeCommandArgs(argv);
    try {
      const result = await uncordon(kc.makeApiClient(CoreV1Api), node);
      if (result === UncordonResult.uncordoned) out(`node/${node} uncordoned`);
      else if (result === UncordonResult.notCordoned) out(`node/${node} already uncordoned`);
      else {
        err(
          `node/${node} was cordoned by someone else, not nuo: leaving it cordoned (kubectl uncordon overrides)`,
        );
        return 1;
      }
      return 0;
    } catch (e) {
      err(explainApiError(e, kc));
      return 1;
    }
  },
};
