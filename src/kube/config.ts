/** Loading a kubeconfig the way kubectl does (flag, then $KUBECONFIG, then ~/.kube/config, then in-cluster). */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { PooledKubeConfig } from './pooled-kubeconfig.ts';

export function loadKubeconfig({
  kubeconfig,
  context,
}: {
  kubeconfig?: string;
  context?: string;
} = {}): PooledKubeConfig {
  const kc = new PooledKubeConfig();
  const fromEnv = process.env.KUBECONFIG;
  const home = join(homedir(), '.kube', 'config');
  if (kubeconfig) {
    if (!existsSync(kubeconfig)) throw new Error(`kubeconfig ${kubeconfig} does not exist`);
    kc.loadFromFile(kubeconfig);
  } else if (fromEnv) {
    const files = fromEnv.split(':').filter(Boolean);
    if (!files.some((f) => existsSync(f))) throw new Error(`KUBECONFIG names no existing file (${fromEnv})`);
    kc.loadFromDefault();
  } else if (existsSync(home)) {
    kc.loadFromFile(home);
  } else if (process.env.KUBERNETES_SERVICE_HOST) {
    kc.loadFromCluster();
  } else {
    throw new Error('no kubeconfig: pass --kubeconfig, set KUBECONFIG, or create ~/.kube/config');
  }
  if (context) {
    if (!kc.getContextObject(context)) throw new Error(`context "${context}" not found in the kubeconfig`);
    kc.setCurrentContext(context);
  }
  if (!kc.getCurrentCluster()) throw new Error('the kubeconfig has no current cluster (set current-context)');
  return kc;
}
