/**
 * nuo onto VM nodes as a user installs it: this checkout's image pushed to the local registry, the chart
 * pushed there as an OCI artifact and installed with `helm install oci://…`, with the chart's own
 * ServiceAccounts, RBAC and admission policy, its workloads placed on the VM nodes.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { AppsV1Api } from '@kubernetes/client-node';
import { CHART_DIR, type Helm } from '../../../tools/helm/run.ts';
import { buildImage } from '../../../tools/image/build.ts';
import { VM_NODE_LABEL } from './config-disk.ts';

export const NS = 'nuo-system';

export interface Installed {
  /** The image reference the chart was installed with. */
  image: string;
  /** What `helm install` printed. */
  stdout: string;
}

function check(
  what: string,
  r: { status: number | null; stdout: string; stderr: string; error?: Error },
): string {
  if (r.status !== 0) {
    throw new Error(`${what} failed (${r.error?.message ?? `exit ${r.status}`}):\n${r.stdout}${r.stderr}`);
  }
  return `${r.stdout}${r.stderr}`;
}

/** Builds (or finds cached) the amd64 image, pushes it and the chart to `registry`, installs the chart. */
export function installFromRegistry(o: {
  registry: string;
  helm: Helm;
  kubeconfigPath: string;
  /** The one node the operator's replicas run on (default: any VM node). */
  operatorNode?: string;
  /** Further `helm install` arguments, e.g. `--set defaultPolicy.enabled=false`. */
  values?: string[];
  log: (line: string) => void;
}): Installed {
  const built = buildImage(o.log);
  const image = `${o.registry}/nuo-dev/nuo:${built.tag}`;
  check(
    `skopeo copy to ${image}`,
    spawnSync(
      'skopeo',
      ['copy', '--dest-tls-verify=false', `oci:${built.layout}:${built.tag}`, `docker://${image}`],
      {
        encoding: 'utf8',
        timeout: 300_000,
      },
    ),
  );
  const work = mkdtempSync(join(tmpdir(), 'nuo-vm-chart-'));
  try {
    const packaged = check('helm package', o.helm('package', CHART_DIR, '--destination', work));
    const archive = packaged.match(/saved it to: (\S+\.tgz)/)?.[1];
    const version = basename(archive ?? '').match(/^nuo-(.+)\.tgz$/)?.[1];
    if (!archive || !version) throw new Error(`helm package printed no archive:\n${packaged}`);
    check('helm push', o.helm('push', archive, `oci://${o.registry}/nuo-dev/charts`, '--plain-http'));
    const chart = `oci://${o.registry}/nuo-dev/charts/nuo`;
    const onVms = JSON.stringify({ [VM_NODE_LABEL]: 'true' });
    const operatorOn = o.operatorNode ? JSON.stringify({ 'kubernetes.io/hostname': o.operatorNode }) : onVms;
    const stdout = check(
      `helm install nuo ${chart}`,
      o.helm(
        'install',
        'nuo',
        chart,
        '--version',
        version,
        '--plain-http',
        '-n',
        NS,
        '--create-namespace',
        '--set',
        `image.repository=${o.registry}/nuo-dev/nuo`,
        '--set',
        `image.tag=${built.tag}`,
        // KWOK's nodes run no containers: nuo's pods go where they really run.
        '--set-json',
        `agent.nodeSelector=${onVms}`,
        '--set-json',
        `operator.nodeSelector=${operatorOn}`,
        ...(o.values ?? []),
        `--kubeconfig=${o.kubeconfigPath}`,
      ),
    );
    return { image, stdout };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * nuo's agent Ready on each of `vms` VM nodes and every operator replica available, the standby too: a
 * snapshot taken before (nuo whatif) plays the starting standby as unready for the whole rollout.
 */
export async function nuoAvailable(apps: AppsV1Api, vms: number): Promise<boolean> {
  const agent = await apps.readNamespacedDaemonSet({ name: 'nuo-agent', namespace: NS });
  const operator = await apps.readNamespacedDeployment({ name: 'nuo-operator', namespace: NS });
  return agent.status?.numberReady === vms && operator.status?.availableReplicas === operator.spec?.replicas;
}
