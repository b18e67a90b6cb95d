import { createServer, type ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { destination, pino } from 'pino';
import { serveFleetLock } from '../fleetlock/server.ts';
import type { KubeLog } from '../kube/backoff.ts';
import { configUsage, FIELDS, loadOperatorConfig, movedSetting } from '../operator/config.ts';
import { Operator } from '../operator/controller.ts';
import { OperatorMetrics } from '../operator/metrics.ts';
import { buildInfo } from '../util/build-info.ts';
import { parseDuration } from '../util/duration.ts';
import { positiveInt } from './args.ts';
import { type Command, UsageError } from './command.ts';
import { kubeconfigFrom, kubeFlags } from './kube.ts';
import { usageText } from './usage.ts';

const HEAP_GROWING = '--heap-growing-percent=50';

/** A KubeLog writing JSON lines through pino (structured, cheap, what log pipelines expect). */
function pinoLog(name: string): KubeLog {
  const logger = pino({ name, level: process.env.NUO_LOG_LEVEL ?? 'info' }, destination(2));
  return (level, msg, fields = {}) => logger[level](fields, msg);
}

const NODE_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** The node the operator runs on: the flag, else $NODE_NAME (the downward API's spec.nodeName); '' is none. */
function ownNodeName(flag: string | undefined, env: string | undefined): string | undefined {
  const name = flag ?? env ?? '';
  if (name === '') return undefined;
  if (!NODE_NAME.test(name)) {
    const from = flag === undefined ? 'NODE_NAME' : '--node-name';
    throw new UsageError(
      `${from}: "${name}" is not a node name (a DNS subdomain: lower-case letters, digits, '-', '.')`,
    );
  }
  return name;
}

/**
 * Where this replica's FleetLock server answers others: the flag (an http or https URL), else
 * http://$POD_IP:PORT; none while FleetLock is off (pure).
 */
export function advertisedUrl(
  flag: string | undefined,
  podIp: string | undefined,
  port: number,
): string | undefined {
  if (port === 0) {
    if (flag !== undefined) throw new UsageError('--fleetlock-advertise-url needs --fleetlock-port');
    return undefined;
  }
  if (flag !== undefined) {
    let url: URL;
    try {
      url = new URL(flag);
    } catch {
      throw new UsageError(
        `--fleetlock-advertise-url: "${flag}" is not a URL (e.g. http://10.0.0.5:${port})`,
      );
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new UsageError(`--fleetlock-advertise-url: "${flag}" is not an http or https URL`);
    return flag;
  }
  if (!podIp) return undefined;
  return `http://${podIp.includes(':') ? `[${podIp}]` : podIp}:${port}`;
}

export const operatorCommand: Command = {
  name: 'operator',
  summary: 'run the operator (leader-elected; decides, drains, grants reboots)',
  usage: usageText([
    'Usage: nuo operator [flags]',
    '',
    'Settings come from defaults < --config FILE (YAML/JSON, keys as the flag names) < NUO_* environment < flags.',
    'How and when nodes are updated (budgets, windows, drain, timeouts, soak, hooks) is set per pool in',
    'UpdatePolicies (docs/policies.md); with none, no node is touched.',
    '',
    'Flags:',
    '  --config FILE                  settings file',
    '  --identity NAME                leader-election identity (default: $POD_NAME or the host name)',
    '  --node-name NAME               the node this process runs on: it goes last in its pool, and the leader',
    '                                 hands over before draining it (default: $NODE_NAME; unset: neither)',
    '  --metrics-port N               serve /metrics, /healthz (live) and /readyz (node cache synced and fresh)',
    '                                 on this port (default 8080; 0 disables)',
    "  --fleetlock-port N             serve FleetLock (Zincati's reboot lock) on this port for pools with",
    '                                 agentProtocol: fleetlock; the leader answers, the others forward to it',
    '                                 (default 0: off)',
    "  --fleetlock-advertise-url URL  where this replica's FleetLock server answers, told to the others while",
    '                                 it leads (default: http://$POD_IP:PORT when $POD_IP is set; unset: the',
    '                                 others answer 503 not_leader instead of forwarding)',
    '  --lease-duration D             standbys take over this long after the last renewal they saw (default 15s)',
    '  --renew-deadline D             the leader steps down when it could not renew for this long (default 10s)',
    '  --retry-period D               between attempts to acquire or renew the Lease (default 2s)',
    configUsage(),
  ]),
  async run(argv) {
    const options: Record<string, { type: 'string' | 'boolean' }> = {
      config: { type: 'string' },
      identity: { type: 'string' },
      'node-name': { type: 'string' },
      'metrics-port': { type: 'string' },
      'fleetlock-port': { type: 'string' },
      'fleetlock-advertise-url': { type: 'string' },
      // Leader-election timings, process settings (decision 37): client-go's 15 s / 10 s / 2 s by default.
      'lease-duration': { type: 'string' },
      'renew-deadline': { type: 'string' },
      'retry-period': { type: 'string' },
      ...kubeFlags,
    };
    for (const f of FIELDS) options[f.flag] = { type: 'string' };
    for (const arg of argv) {
      const moved = /^--([a-z-]+)/.exec(arg)?.[1];
      const why = moved && !options[moved] ? movedSetting(moved) : undefined;
      if (why) throw new UsageError(`--${moved}: ${why}`);
    }
    const { values, positionals } = parseArgs({ args: argv, options, strict: true, allowPositionals: true });
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    const flags: Record<string, string | undefined> = {};
    for (const f of FIELDS) flags[f.flag] = values[f.flag] as string | undefined;
    let config: ReturnType<typeof loadOperatorConfig>;
    try {
      config = loadOperatorConfig({ flags, env: process.env, file: values.config as string | undefined });
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const nodeName = ownNodeName(values['node-name'] as string | undefined, process.env.NODE_NAME);
    const duration = (flag: string, fallback: number) => {
      const v = values[flag] as string | undefined;
      if (v === undefined) return fallback;
      try {
        return parseDuration(v);
      } catch (err) {
        throw new UsageError(`--${flag}: ${(err as Error).message}`);
      }
    };
    const lease = {
      leaseDurationMs: duration('lease-duration', 15_000),
      renewDeadlineMs: duration('renew-deadline', 10_000),
      retryPeriodMs: duration('retry-period', 2_000),
    };
    const kc = kubeconfigFrom(values as { kubeconfig?: string; context?: string });
    const identity = (values.identity as string | undefined) ?? process.env.POD_NAME ?? hostname();
    const log = pinoLog('nuo-operator');
    const metrics = new OperatorMetrics(buildInfo());
    const port = positiveInt('metrics-port', values['metrics-port'] as string | undefined, 8080);
    const fleetLockPort = positiveInt('fleetlock-port', values['fleetlock-port'] as string | undefined, 0);
    const fleetLockUrl = advertisedUrl(
      values['fleetlock-advertise-url'] as string | undefined,
      process.env.POD_IP,
      fleetLockPort,
    );
    const operator = new Operator({
      kubeconfig: kc,
      config,
      identity,
      log,
      metrics,
      lease,
      ...(nodeName === undefined ? {} : { nodeName }),
      ...(fleetLockUrl === undefined ? {} : { fleetLockUrl }),
    });
    const probe = (problems: string[], res: ServerResponse) =>
      problems.length === 0 ? res.end('ok') : res.writeHead(503).end(`${problems.join('\n')}\n`);
    const server =
      port > 0
        ? createServer(async (req, res) => {
            if (req.url === '/metrics') {
              res.setHeader('Content-Type', metrics.registry.contentType);
              res.end(await metrics.registry.metrics());
            } else if (req.url === '/healthz') probe(operator.probes().live, res);
            else if (req.url === '/readyz') probe(operator.probes().ready, res);
            else res.writeHead(404).end();
          }).listen(port)
        : undefined;
    // The heap grows to 1.5× its live data between full collections instead of V8's up to 4× on a
    // machine with gigabytes: the operator's live data is small but it churns through garbage, and its
    // memory peak is what a node's limit must hold (bench:footprint). Not allowed in NODE_OPTIONS, and
    // read by V8 whenever it sets the next limit, so it is set here, at start.
    setFlagsFromString(HEAP_GROWING);
    const stop = new AbortController();
    const shutdown = (signal: NodeJS.Signals) => {
      log('info', `${signal}: shutting down`);
      stop.abort();
    };
    process.once('SIGTERM', shutdown);
    process.once('SIGINT', shutdown);
    if (fleetLockPort > 0)
      serveFleetLock({
        port: fleetLockPort,
        backend: operator.fleetLock(),
        log,
        identity,
        stopping: stop.signal,
      });
    log('info', 'starting', { identity, build: buildInfo(), config: { ...config } });
    try {
      await operator.run(stop.signal);
    } finally {
      server?.close();
    }
    return 0;
  },
};
