import { parseArgs } from 'node:util';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { cordon, UncordonResult, uncordon } from '../drain/cordon.ts';
import { Drainer, DrainOutcome } from '../drain/evict.ts';
import type { DrainOptions } from '../drain/options.ts';
import { PodAction } from '../drain/plan.ts';
import type { DrainEvent } from '../drain/progress.ts';
import { AfterMaxWait, describeWait, type WaitFor, waitForProblems } from '../drain/wait-for.ts';
import { parseDuration } from '../util/duration.ts';
import { positiveInt } from './args.ts';
import { type Command, err, out, UsageError } from './command.ts';
import { explainApiError, kubeconfigFrom, kubeFlags, nodeCommandArgs } from './kube.ts';
import { nodeCommandUsage, usageText } from './usage.ts';

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
    case 'finished':
      out(`pod/${e.pod.name} finished`);
      return;
    case 'released':
      out(`pod ${e.pod.namespace}/${e.pod.name} ${e.reason}`);
      return;
    case 'waiting':
      err(`waiting on ${e.holds.join('; ')}`);
      return;
  }
}

export const drainCommand: Command = {
  name: 'drain',
  summary: 'cordon nodes and evict their pods through the Eviction API (like kubectl drain, bounded)',
  usage: usageText([
    'Usage: nuo drain NODE... [flags]',
    '       nuo drain -l SELECTOR [flags]',
    '',
    'Cordons each NODE (recording nuo.dev/cordoned-by-nuo only if nuo made it unschedulable), every one',
    'before the first drain as kubectl does, so that evicted pods do not land on a node drained next; then',
    'drains them one after another: evicts their pods in parallel, lowest priority first, retrying',
    'evictions a PodDisruptionBudget refuses, until every pod is gone or the timeout passes. A failed',
    "drain leaves its node cordoned: `nuo uncordon NODE` undoes nuo's cordon.",
    '',
    'Flags (as kubectl drain):',
    '  -l, --selector SELECTOR          drain the nodes matching this label selector (not with NODE)',
    '  --dry-run                        show what would be evicted; change nothing',
    '  --force                          evict pods that no controller manages',
    '  --ignore-daemonsets              leave DaemonSet-managed pods in place',
    '  --delete-emptydir-data           evict pods with emptyDir volumes (their data is lost)',
    '  --pod-selector SELECTOR          only evict pods matching this label selector',
    "  --grace-period SECONDS           termination grace period per pod (default -1: the pod's own)",
    "  --timeout DURATION               give up on a node after this long (default 10m; 0s waits forever, as kubectl's default)",
    '  --skip-wait-for-delete-timeout N do not wait for pods deleted more than N seconds ago (default 0)',
    '  --disable-eviction               delete pods directly, bypassing PodDisruptionBudgets',
    '  --chunk-size N                   objects per page of each list (default 500)',
    '  --concurrency N                  evictions in flight at once (default 50)',
    '',
    'Flags (nuo only):',
    '  --wait-for SELECTOR              leave pods matching this label selector running until they finish',
    '                                   (e.g. batch Jobs), up to --max-wait; may be repeated',
    '  --max-wait DURATION              how long --wait-for waits, from the start of the drain (required with it)',
    '  --after-max-wait Evict|Fail      a pod still running then is evicted (default) or the drain fails',
  ]),
  async run(argv) {
    const { positionals, values } = parseArgs({
      args: normaliseDryRun(argv),
      allowPositionals: true,
      strict: true,
      options: {
        selector: { type: 'string', short: 'l' },
        'dry-run': { type: 'boolean', default: false },
        force: { type: 'boolean', default: false },
        'ignore-daemonsets': { type: 'boolean', default: false },
        'delete-emptydir-data': { type: 'boolean', default: false },
        'pod-selector': { type: 'string', default: '' },
        'grace-period': { type: 'string' },
        timeout: { type: 'string' },
        'skip-wait-for-delete-timeout': { type: 'string' },
        'disable-eviction': { type: 'boolean', default: false },
        'chunk-size': { type: 'string' },
        concurrency: { type: 'string' },
        'wait-for': { type: 'string', multiple: true, default: [] },
        'max-wait': { type: 'string' },
        'after-max-wait': { type: 'string', default: AfterMaxWait.evict },
        ...kubeFlags,
      },
    });
    if (values.selector !== undefined && positionals.length > 0)
      throw new UsageError('cannot specify both a NODE and a --selector');
    if (values.selector === undefined && positionals.length === 0)
      throw new UsageError('expected a NODE, or --selector to choose nodes by their labels');
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
      chunkSize: positiveInt('chunk-size', values['chunk-size'], 500, 1),
      concurrency: positiveInt('concurrency', values.concurrency, 50, 1),
      waitFor: waitForFlags(values['wait-for'], values['max-wait'], values['after-max-wait']),
    };
    const kc = kubeconfigFrom(values);
    const core = kc.makeApiClient(CoreV1Api);
    const dryRun = values['dry-run'];
    const controller = new AbortController();
    const interrupt = () => controller.abort();
    process.once('SIGINT', interrupt);
    try {
      const nodes =
        values.selector === undefined
          ? positionals
          : await nodesMatching(core, values.selector, options.chunkSize ?? 500);
      if (nodes.length === 0) {
        err(`error: no node matches the selector "${values.selector}"`);
        return 1;
      }
      const cordonedHere = new Set<string>();
      if (!dryRun) {
        for (const node of nodes) {
          const { changed } = await cordon(core, node);
          if (changed) cordonedHere.add(node);
          out(changed ? `node/${node} cordoned` : `node/${node} already cordoned`);
        }
      }
      const failed: string[] = [];
      for (const node of nodes) {
        if (controller.signal.aborted) break;
        const ok = await drainOne(kc, node, options, { dryRun, signal: controller.signal, cordonedHere });
        if (!ok) failed.push(node);
      }
      if (failed.length > 0 && nodes.length > 1) err(`error: unable to drain node(s): ${failed.join(', ')}`);
      return failed.length === 0 && !controller.signal.aborted ? 0 : 1;
    } catch (e) {
      err(explainApiError(e, kc));
      return 1;
    } finally {
      process.off('SIGINT', interrupt);
    }
  },
};

/** --wait-for, --max-wait and --after-max-wait as the drain engine's rules, one per --wait-for. */
function waitForFlags(selectors: string[], maxWait: string | undefined, after: string): WaitFor[] {
  if (selectors.length === 0) {
    if (maxWait !== undefined)
      throw new UsageError('--max-wait needs --wait-for SELECTOR: the pods to wait for');
    return [];
  }
  if (maxWait === undefined)
    throw new UsageError('--wait-for needs --max-wait DURATION: how long to wait for those pods');
  const afterMaxWait = Object.values(AfterMaxWait).find((v) => v.toLowerCase() === after.toLowerCase());
  if (!afterMaxWait) throw new UsageError(`--after-max-wait must be Evict or Fail, got "${after}"`);
  let ms: number;
  try {
    ms = parseDuration(maxWait);
  } catch (e) {
    throw new UsageError(`--max-wait: ${(e as Error).message}`);
  }
  const rules = selectors.map((selector) => ({
    name: `--wait-for ${selector}`,
    selector,
    namespaceSelector: '',
    maxWaitSeconds: Math.ceil(ms / 1000),
    afterMaxWait,
  }));
  const problems = waitForProblems(rules);
  if (problems.length > 0) throw new UsageError(problems.join('; '));
  return rules;
}

/** The names of the nodes a label selector matches, read page by page. */
async function nodesMatching(core: CoreV1Api, selector: string, chunkSize: number): Promise<string[]> {
  const names: string[] = [];
  let _continue: string | undefined;
  do {
    const page = await core.listNode({ labelSelector: selector, limit: chunkSize, _continue });
    names.push(...page.items.map((n) => n.metadata?.name ?? ''));
    _continue = page.metadata?._continue || undefined;
  } while (_continue);
  return names;
}

/** Drains one node already cordoned (unless a dry run), printing as kubectl does; true when drained. */
async function drainOne(
  kc: KubeConfig,
  node: string,
  options: Partial<DrainOptions>,
  run: { dryRun: boolean; signal: AbortSignal; cordonedHere: ReadonlySet<string> },
): Promise<boolean> {
  const result = await new Drainer(kc).drain({
    node,
    options,
    dryRun: run.dryRun,
    cordoned: !run.dryRun,
    signal: run.signal,
    onEvent: (e) => printEvent(e, run.dryRun),
  });
  if (run.dryRun) {
    for (const d of result.plan.decisions) {
      if (d.action === PodAction.evict) out(`(dry run) evicting pod ${d.namespace}/${d.name}`);
      if (d.wait) out(`(dry run) waiting for ${describeWait(d, d.wait)}`);
    }
  }
  if (result.outcome === DrainOutcome.drained) {
    out(`node/${node} ${run.dryRun ? 'drained (dry run)' : 'drained'}`);
    return true;
  }
  err(`error: unable to drain node "${node}": ${result.message}`);
  if (run.cordonedHere.has(node))
    err(`node/${node} stays cordoned; run "nuo uncordon ${node}" to undo nuo's cordon`);
  return false;
}

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
