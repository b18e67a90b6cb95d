/**
 * The rollout benchmark's independent observer, in a process of its own: it watches every node and
 * prints each phase change as a JSON line {node, phase, at} and each change of the operator's reason as
 * {node, reason, at} (`at`: epoch milliseconds, sub-millisecond, when the watch delivered it), after one
 * line {"synced": true}.
 *
 * Its own process, because the benchmark's process also runs every simulated host and agent: at the
 * start of a 1,000-node rollout their work delayed that process's watch by seconds, and the figures
 * measured the simulator instead of the operator.
 *
 * Usage: node bench/phase-observer.ts KUBECONFIG
 */
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { Annotations } from '../src/api/keys.ts';
import { Phase } from '../src/api/phases.ts';
import { loadKubeconfig } from '../src/kube/config.ts';
import { ResilientInformer } from '../src/kube/informer.ts';

const [kubeconfigPath] = process.argv.slice(2);
if (!kubeconfigPath) {
  process.stderr.write('usage: node bench/phase-observer.ts KUBECONFIG\n');
  process.exit(2);
}
const kubeconfig = loadKubeconfig({ kubeconfig: kubeconfigPath });
const core = kubeconfig.makeApiClient(CoreV1Api);
const informer = new ResilientInformer<V1Node>({
  kubeconfig,
  path: '/api/v1/nodes',
  list: (o) => core.listNode(o),
  name: 'bench-observer',
});
const last = new Map<string, string>();
const lastReason = new Map<string, string>();
informer.onEvent((_type, n) => {
  const node = n.metadata?.name ?? '';
  const phase = n.metadata?.annotations?.[Annotations.state] ?? Phase.idle;
  const reason = n.metadata?.annotations?.[Annotations.stateReason] ?? '';
  const at = performance.timeOrigin + performance.now();
  if (last.get(node) !== phase) {
    last.set(node, phase);
    process.stdout.write(`${JSON.stringify({ node, phase, at })}\n`);
  }
  if (lastReason.get(node) !== reason) {
    lastReason.set(node, reason);
    process.stdout.write(`${JSON.stringify({ node, reason, at })}\n`);
  }
});
await informer.start();
process.stdout.write(`${JSON.stringify({ synced: true })}\n`);
process.on('SIGTERM', () => {
  void informer.stop().finally(() => process.exit(0));
});
