/**
 * `nuo agent`: the per-node DaemonSet process. Lean by construction: it imports neither
 * @kubernetes/client-node nor anything of the operator.
 */
import { parseArgs } from 'node:util';
import { NodeAgent } from '../agent/agent.ts';
import { AnyDetector } from '../agent/detect/any.ts';
import { CommandDetector, DEFAULT_HOST_PREFIX } from '../agent/detect/command.ts';
import { CosUpdateEngineDetector } from '../agent/detect/cos-update-engine.ts';
import {
  DEFAULT_HOST_ROOT,
  DEFAULT_SENTINEL_FILE,
  SentinelFileDetector,
} from '../agent/detect/sentinel-file.ts';
import { UpdateEngineDetector } from '../agent/detect/update-engine.ts';
import { OperatorGrants } from '../agent/grant-key.ts';
import { LinuxBootId, LinuxBootTime } from '../agent/linux.ts';
import type { Detector, Rebooter } from '../agent/os.ts';
import { readOsRelease } from '../agent/os-release.ts';
import { CommandRebooter, DEFAULT_REBOOT_COMMAND } from '../agent/reboot/command.ts';
import { RebootDeadline } from '../agent/reboot/deadline.ts';
import { LogindRebooter } from '../agent/reboot/logind.ts';
import { DEFAULT_REBOOT_SIGNAL, SignalRebooter } from '../agent/reboot/signal.ts';
import { DEFAULT_NAMESPACE, Labels } from '../api/keys.ts';
import { inClusterCredentials, LeanClient } from '../kube/lean-client.ts';
import { argv, durationFlag, intList } from './args.ts';
import { type Command, UsageError } from './command.ts';

const DETECTORS = ['update-engine', 'cos-update-engine', 'sentinel-file', 'command'] as const;
const REBOOTERS = ['logind', 'command', 'signal'] as const;

export const agentCommand: Command = {
  name: 'agent',
  summary: 'run the node agent (detects reboot needs, reboots when granted)',
  usage: [
    'Usage: nuo agent [flags]',
    '',
    'Watches only its own Node, publishes nuo.dev/reboot-needed from its detectors, and reboots when the',
    'operator grants it (nuo.dev/reboot-ok, signed by the operator for this node and boot) — never on a grant',
    'the operator did not give, never twice for one grant, never because a check failed.',
    '',
    'Flags:',
    '  --node-name NAME                 this node (default $NODE_NAME)',
    `  --detector LIST                  any of ${DETECTORS.join(', ')} (default sentinel-file)`,
    `  --host-root DIR                  where the host's / is mounted (default ${DEFAULT_HOST_ROOT})`,
    `  --sentinel-file PATH             reboot needed while it exists (default ${DEFAULT_SENTINEL_FILE})`,
    '  --check-command "CMD ARGS"       command detector, run in the host mount namespace',
    '  --check-needed-codes LIST        exit codes meaning "reboot needed" (default 1)',
    '  --check-not-needed-codes LIST    exit codes meaning "no reboot needed" (default 0)',
    '  --check-timeout D                command detector timeout (default 30s)',
    `  --host-prefix "CMD ARGS"         runs commands in the host (default "${DEFAULT_HOST_PREFIX.join(' ')}"; "" for none)`,
    `  --rebooter NAME                  one of ${REBOOTERS.join(', ')} (default logind)`,
    `  --reboot-command "CMD ARGS"      command rebooter (default "${DEFAULT_REBOOT_COMMAND.join(' ')}")`,
    `  --reboot-signal SIG              signal rebooter's signal to PID 1 (default ${DEFAULT_REBOOT_SIGNAL})`,
    '  --reboot-timeout D               report on the node if the host is still up this long after rebooting (default 10m)',
    "  --proc DIR                       where the host's procfs is mounted, read for its boot ID and boot time",
    '                                   (default /proc; e.g. /host/proc when the pod mounts it there)',
    '  --dbus-address ADDR              system bus (default $DBUS_SYSTEM_BUS_ADDRESS or /run/dbus/system_bus_socket)',
    '  --check-interval D               how often detectors are polled (default 60s)',
    '  --report-spread D                report a newly detected need for a reboot after a random delay',
    '                                   up to D, so a fleet updated at once does not write at once (default 10s; 0: at once)',
    `  --namespace NS                   the operator's namespace, where it publishes its grant key`,
    `                                   (default $POD_NAMESPACE or ${DEFAULT_NAMESPACE})`,
    '  --kubeconfig FILE                kubeconfig (default: the in-cluster ServiceAccount)',
  ].join('\n'),
  async run(args) {
    const { values, positionals } = parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: {
        'node-name': { type: 'string' },
        detector: { type: 'string', default: 'sentinel-file' },
        'host-root': { type: 'string', default: DEFAULT_HOST_ROOT },
        'sentinel-file': { type: 'string', default: DEFAULT_SENTINEL_FILE },
        'check-command': { type: 'string' },
        'check-needed-codes': { type: 'string' },
        'check-not-needed-codes': { type: 'string' },
        'check-timeout': { type: 'string' },
        'host-prefix': { type: 'string' },
        rebooter: { type: 'string', default: 'logind' },
        'reboot-command': { type: 'string' },
        'reboot-signal': { type: 'string', default: DEFAULT_REBOOT_SIGNAL },
        'reboot-timeout': { type: 'string' },
        'dbus-address': { type: 'string' },
        proc: { type: 'string', default: '/proc' },
        'check-interval': { type: 'string' },
        'report-spread': { type: 'string' },
        namespace: { type: 'string' },
        kubeconfig: { type: 'string' },
      },
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    const nodeName = values['node-name'] ?? process.env.NODE_NAME;
    if (!nodeName) throw new UsageError('--node-name (or $NODE_NAME) is required');
    const hostPrefix =
      values['host-prefix'] === undefined
        ? [...DEFAULT_HOST_PREFIX]
        : values['host-prefix'].split(/\s+/).filter(Boolean);
    const bus = { address: values['dbus-address'] };
    const names = values.detector.split(',').map((s) => s.trim());
    const detectors: Detector[] = [];
    try {
      for (const name of names) {
        if (name === 'update-engine') detectors.push(new UpdateEngineDetector(bus));
        else if (name === 'cos-update-engine') detectors.push(new CosUpdateEngineDetector(bus));
        else if (name === 'sentinel-file') {
          detectors.push(
            new SentinelFileDetector({ hostRoot: values['host-root'], path: values['sentinel-file'] }),
          );
        } else if (name === 'command') {
          if (!values['check-command']) throw new UsageError('--detector command needs --check-command');
          detectors.push(
            new CommandDetector({
              command: argv('check-command', values['check-command'], []),
              hostPrefix,
              neededExitCodes: intList('check-needed-codes', values['check-needed-codes'], [1]),
              notNeededExitCodes: intList('check-not-needed-codes', values['check-not-needed-codes'], [0]),
              timeoutMs: durationFlag('check-timeout', values['check-timeout'], '30s'),
            }),
          );
        } else
          throw new UsageError(`--detector: unknown detector "${name}" (known: ${DETECTORS.join(', ')})`);
      }
    } catch (err) {
      if (err instanceof UsageError) throw err;
      throw new UsageError((err as Error).message);
    }
    let rebooter: Rebooter;
    try {
      if (values.rebooter === 'logind') rebooter = new LogindRebooter(bus);
      else if (values.rebooter === 'command') {
        rebooter = new CommandRebooter({
          command: argv('reboot-command', values['reboot-command'], DEFAULT_REBOOT_COMMAND),
          hostPrefix,
        });
      } else if (values.rebooter === 'signal')
        rebooter = new SignalRebooter({ signal: values['reboot-signal'] });
      else
        throw new UsageError(
          `--rebooter: unknown rebooter "${values.rebooter}" (known: ${REBOOTERS.join(', ')})`,
        );
    } catch (err) {
      if (err instanceof UsageError) throw err;
      throw new UsageError((err as Error).message);
    }
    const bootId = new LinuxBootId(values.proc);
    try {
      await bootId.read();
    } catch (err) {
      throw new UsageError(
        `--proc ${values.proc}: ${(err as Error).message}; point --proc at the host's procfs (default /proc)`,
      );
    }
    const log = (level: string, message: string) =>
      process.stderr.write(
        `${JSON.stringify({ time: new Date().toISOString(), level, node: nodeName, msg: message })}\n`,
      );
    const client = new LeanClient(
      values.kubeconfig
        ? (await import('../kube/kubeconfig-credentials.ts')).kubeconfigCredentials(values.kubeconfig)
        : inClusterCredentials(),
    );
    const labels: Record<string, string> = {};
    try {
      const os = await readOsRelease(values['host-root']);
      labels[Labels.osId] = os.id;
      labels[Labels.osVersion] = os.versionId;
    } catch (err) {
      log('warn', `no OS labels: ${(err as Error).message}`);
    }
    let agent: NodeAgent | undefined;
    const guarded = new RebootDeadline(rebooter, {
      timeoutMs: durationFlag('reboot-timeout', values['reboot-timeout'], '10m'),
      onMissed: (missed) => agent?.reportProblem(missed.message),
    });
    agent = new NodeAgent({
      nodeName,
      client,
      detector: detectors.length === 1 ? (detectors[0] as Detector) : new AnyDetector(detectors),
      rebooter: guarded,
      bootId,
      bootTime: new LinuxBootTime(values.proc),
      grants: new OperatorGrants(client, values.namespace ?? process.env.POD_NAMESPACE ?? DEFAULT_NAMESPACE),
      labels,
      checkIntervalMs: durationFlag('check-interval', values['check-interval'], '60s'),
      reportSpreadMs: durationFlag('report-spread', values['report-spread'], '10s'),
      log,
    });
    const stop = new AbortController();
    process.once('SIGTERM', () => stop.abort());
    process.once('SIGINT', () => stop.abort());
    log('info', `agent starting: detector ${names.join('+')}, rebooter ${rebooter.name}`);
    await agent.run(stop.signal);
    client.close();
    return 0;
  },
};
