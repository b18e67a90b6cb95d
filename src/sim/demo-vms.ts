/**
 * `nuo demo --vms N`: real machines beside the simulated ones. N VM nodes (src/sim/vm) join the demo's
 * control plane; nuo is installed on them as a user installs it (its image and chart pushed to a local
 * registry, `helm install oci://…`, the chart's own ServiceAccounts and RBAC), so the chart's operator
 * leads the whole rollout, KWOK nodes included, and the chart's agent runs on each VM; web pods of a real
 * image run on the VMs under a PDB; each VM is marked as needing a reboot as Debian's packages mark it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api } from '@kubernetes/client-node';
import { helmIn } from '../../tools/helm/run.ts';
import { pollUntil } from '../util/poll.ts';
import type { SafetyChecker } from './checker.ts';
import type { LocalCluster } from './cluster/cluster.ts';
import { startRegistry } from './cluster/registry.ts';
import { installFromRegistry, nuoAvailable } from './vm/install-nuo.ts';
import { startVmNodes, type VmFleet, vmNodeSpecs } from './vm/vms.ts';
import { deployVmWeb, webAvailable } from './vm/web.ts';

export interface DemoVms {
  fleet: VmFleet;
  names: string[];
  /** Allows each VM one reboot and leaves Debian's /var/run/reboot-required on it. */
  stage(checker: SafetyChecker): Promise<void>;
  stop(): Promise<void>;
}

const WEB = 'vm-web';
const SHUTDOWN_MS = 3000;

export async function startDemoVms(
  cluster: LocalCluster,
  o: { count: number; zones: number; namespace: string; log: (line: string) => void },
): Promise<DemoVms> {
  const registry = await startRegistry();
  const helmHome = mkdtempSync(join(tmpdir(), 'nuo-demo-helm-'));
  const cleanUp = async () => {
    await registry.stop();
    rmSync(helmHome, { recursive: true, force: true });
  };
  try {
    const fleet = await startVmNodes(cluster, {
      nodes: vmNodeSpecs(o.count, o.zones),
      registry: registry.host,
      log: o.log,
    });
    const names = fleet.nodes.map((n) => n.name);
    o.log('Installing nuo on them from its chart, pulled from a local registry (helm install oci://…)…');
    const { image } = installFromRegistry({
      registry: registry.host,
      helm: await helmIn(helmHome),
      kubeconfigPath: cluster.kubeconfigPath,
      // The demo applies its own policy: a node two policies select is left alone.
      values: ['--set', 'defaultPolicy.enabled=false'],
      log: o.log,
    });
    const apps = cluster.kubeconfig.makeApiClient(AppsV1Api);
    // One pod per VM: with more, two VMs draining at once leave the pods they evict nowhere to run
    // (they run only on VMs) while the PDB holds both drains.
    const replicas = o.count;
    await deployVmWeb(cluster.kubeconfig, o.namespace, {
      name: WEB,
      image,
      replicas,
      shutdownMs: SHUTDOWN_MS,
    });
    const slow = fleet.accel === 'tcg' ? 5 : 1;
    await pollUntil(
      "nuo's agent Ready on every VM, every operator replica and every web pod available",
      async () =>
        (await nuoAvailable(apps, o.count)) && (await webAvailable(apps, o.namespace, WEB))
          ? true
          : undefined,
      { timeoutMs: 300_000 * slow, intervalMs: 1000 },
    );
    o.log(
      `  deployment ${o.namespace}/${WEB}: ${replicas} pods of ${image} on the VMs, PDB maxUnavailable=1, ${SHUTDOWN_MS / 1000}s to stop after SIGTERM`,
    );
    return {
      fleet,
      names,
      async stage(checker) {
        fleet.onShutdown((node, bootId) => checker.onReboot(node, bootId));
        for (const vm of fleet.nodes) {
          checker.allowReboots(vm.name);
          const r = await vm.exec(
            'touch /var/run/reboot-required && echo nuo-demo >> /var/run/reboot-required.pkgs',
          );
          if (r.code !== 0) throw new Error(`${vm.name}: leaving the reboot-required sentinel: ${r.stderr}`);
        }
      },
      async stop() {
        await fleet.stop();
        await cleanUp();
      },
    };
  } catch (err) {
    await cleanUp();
    throw err;
  }
}
