/**
 * `kubectl nuo …`: kubectl runs the `kubectl-nuo` executable it finds on PATH with every argument after
 * "nuo" and its own environment. It parses none of its global flags for a plugin (and refuses them
 * before the plugin's name), so nuo reads the kubeconfig as it always does: --kubeconfig, --context,
 * then $KUBECONFIG.
 */
import { main } from './main.ts';

/** nuo's own spelling of the kubeconfig flags every cluster command takes. */
const KUBECONFIG_FLAGS = ['--kubeconfig', '--context'] as const;

/**
 * kubectl's global flags that name a cluster, a credential or a client setting apart from the kubeconfig
 * (`kubectl options`); nuo takes none of them, so each is refused with what to use instead.
 */
const KUBECTL_ONLY_FLAGS = [
  '--as',
  '--as-group',
  '--as-uid',
  '--cache-dir',
  '--certificate-authority',
  '--client-certificate',
  '--client-key',
  '--cluster',
  '--disable-compression',
  '--insecure-skip-tls-verify',
  '--match-server-version',
  '--password',
  '--request-timeout',
  '-s',
  '--server',
  '--tls-server-name',
  '--token',
  '--user',
  '--username',
  '-v',
  '--v',
] as const;

const flagName = (arg: string) => arg.split('=', 1)[0] as string;

/**
 * The argv `nuo` gets for a plugin's argv: kubeconfig flags given before the command move after it
 * (`kubectl nuo --context prod status` is `nuo status --context prod`), or a message for a kubectl
 * global flag nuo does not take.
 */
export function pluginArgv(argv: readonly string[]): { argv: string[] } | { error: string } {
  const end = argv.indexOf('--');
  const flags = end === -1 ? argv : argv.slice(0, end);
  const foreign = flags.find((a) => (KUBECTL_ONLY_FLAGS as readonly string[]).includes(flagName(a)));
  if (foreign !== undefined)
    return {
      error: `${flagName(foreign)} is a kubectl flag that nuo does not take: nuo reaches the cluster through a kubeconfig (--kubeconfig FILE, --context NAME, or $KUBECONFIG)`,
    };
  const leading: string[] = [];
  let i = 0;
  while (i < argv.length) {
    const arg = argv[i] as string;
    if (!(KUBECONFIG_FLAGS as readonly string[]).includes(flagName(arg))) break;
    const takesNext = !arg.includes('=');
    leading.push(...argv.slice(i, takesNext ? i + 2 : i + 1));
    i += takesNext ? 2 : 1;
  }
  if (leading.length === 0) return { argv: [...argv] };
  const [command, ...rest] = argv.slice(i);
  return { argv: command === undefined ? leading : [command, ...leading, ...rest] };
}

export async function kubectlNuo(argv: readonly string[]): Promise<number> {
  const args = pluginArgv(argv);
  if ('error' in args) {
    process.stderr.write(`kubectl nuo: ${args.error}\n`);
    return 2;
  }
  return main(args.argv);
}
