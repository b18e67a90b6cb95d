/**
 * The command lines of the local control plane's components, from its directory, PKI, ports and node
 * Lease duration: a pure builder, so what each component runs with is read in one place.
 */
import { join } from 'node:path';
import type { Pki } from './pki.ts';

export type ComponentName = 'etcd' | 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler' | 'kwok';

/** KWOK plays the nodes annotated `${KWOK_NODE}=fake` (nodes.ts registers them so). */
export const KWOK_NODE = 'kwok.x-k8s.io/node';

/** Nodes annotated `${KWOK_CUSTOM_STATUS}=custom` keep the status their simulated host writes. */
export const KWOK_CUSTOM_STATUS = 'kwok.x-k8s.io/status';

export interface Ports {
  etcdPort: number;
  peerPort: number;
  apiPort: number;
  cmPort: number;
  schedPort: number;
  kwokPort: number;
}

const CONTROLLERS = [
  'disruption',
  'replicaset',
  'deployment',
  'job',
  'daemonset',
  'garbage-collector',
  'node-lifecycle',
  'taint-eviction',
  'serviceaccount',
  'serviceaccount-token',
  'namespace',
  'statefulset',
  'root-ca-certificate-publisher',
  'endpointslice',
  'ttl-after-finished',
  'cronjob',
  'pod-garbage-collector',
  // Binds PersistentVolumeClaims to their volumes: drains wait for evicted pods' volumes to detach.
  'persistentvolume-binder',
  // Makes the claims of pods' generic ephemeral volumes, which drains wait on as on any other.
  'ephemeral-volume',
].map((name) => `${name}-controller`);

export interface ArgsInput {
  dir: string;
  leaseSeconds: number;
  pki: Pki;
  kubeconfigPath: string;
  schedulerConfig: string;
  ports: Ports;
}

export function componentArgs({
  dir,
  leaseSeconds,
  pki,
  kubeconfigPath,
  schedulerConfig,
  ports,
}: ArgsInput): Record<ComponentName, string[]> {
  const etcdUrl = `http://127.0.0.1:${ports.etcdPort}`;
  const peerUrl = `http://127.0.0.1:${ports.peerPort}`;
  return {
    etcd: [
      '--name=nuo',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=nuo=${peerUrl}`,
      // A throwaway test store: durability buys nothing and fsync dominates on a shared disk.
      '--unsafe-no-fsync',
      '--quota-backend-bytes=8589934592',
      '--log-level=warn',
    ],
    'kube-apiserver': [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      // The endpoint reconciler refuses a loopback address; nothing here reaches the API through the
      // kubernetes Service, so it has nothing to reconcile.
      '--endpoint-reconciler-type=none',
      `--secure-port=${ports.apiPort}`,
      `--tls-cert-file=${pki.serverCert}`,
      `--tls-private-key-file=${pki.serverKey}`,
      `--client-ca-file=${pki.caCert}`,
      // Published in kube-system/extension-apiserver-authentication, where the controller-manager and
      // scheduler look for it when they authenticate their own health and metrics endpoints.
      `--requestheader-client-ca-file=${pki.caCert}`,
      '--requestheader-allowed-names=front-proxy-client',
      '--requestheader-username-headers=X-Remote-User',
      '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-',
      // Node: a VM node's kubelet, in group system:nodes, may touch its own Node, pods and Lease only.
      '--authorization-mode=Node,RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${pki.serviceAccountPub}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      '--service-cluster-ip-range=10.96.0.0/16',
      // The release's default admission chain, which includes ValidatingAdmissionPolicy; named to be explicit.
      // NodeRestriction: a kubelet may change only its own Node and the labels a kubelet may set.
      '--enable-admission-plugins=ValidatingAdmissionPolicy,NodeRestriction',
      '--allow-privileged=true',
      '--event-ttl=1h',
      `--cert-dir=${join(dir, 'apiserver-certs')}`,
    ],
    'kube-controller-manager': [
      `--kubeconfig=${kubeconfigPath}`,
      `--authentication-kubeconfig=${kubeconfigPath}`,
      `--authorization-kubeconfig=${kubeconfigPath}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${ports.cmPort}`,
      `--cert-dir=${join(dir, 'cm-certs')}`,
      `--controllers=${CONTROLLERS.join(',')}`,
      `--service-account-private-key-file=${pki.serviceAccountKey}`,
      `--root-ca-file=${pki.caCert}`,
      '--leader-elect=false',
      '--kube-api-qps=1000',
      '--kube-api-burst=2000',
      '--concurrent-deployment-syncs=20',
      '--concurrent-replicaset-syncs=20',
      // PDB status (disruptionsAllowed) is what a drain waits on. One worker (the default) serialises
      // every PDB's status write behind the others', seconds apart on this busy machine.
      '--concurrent-disruption-syncs=20',
      // Beta in v1.36: a ReplicaSet is not synced until the controller's cache shows its own last write.
      // On a dedicated control plane that cache lags by milliseconds; here by seconds, and in a
      // 1,000-node rollout 5,390 syncs failed so and were retried with backoff under the controller's
      // shared 10/s retry limit, delaying the replacement pods that evicted pods' PDBs wait for.
      '--feature-gates=StaleControllerConsistencyReplicaSet=false',
      // A node whose Lease has not been renewed for this long is NotReady (Unknown).
      `--node-monitor-grace-period=${Math.max(50, Math.ceil(leaseSeconds * 1.25))}s`,
    ],
    'kube-scheduler': [
      `--config=${schedulerConfig}`,
      `--authentication-kubeconfig=${kubeconfigPath}`,
      `--authorization-kubeconfig=${kubeconfigPath}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${ports.schedPort}`,
      `--cert-dir=${join(dir, 'scheduler-certs')}`,
    ],
    kwok: [
      `--kubeconfig=${kubeconfigPath}`,
      `--config=${join(dir, 'kwok.yaml')}`,
      '--manage-all-nodes=false',
      `--manage-nodes-with-annotation-selector=${KWOK_NODE}=fake`,
      '--manage-nodes-with-label-selector=',
      // A simulated node host takes over the status of a node it is rebooting (NotReady, new boot ID).
      `--disregard-status-with-annotation-selector=${KWOK_CUSTOM_STATUS}=custom`,
      '--disregard-status-with-label-selector=',
      `--server-address=127.0.0.1:${ports.kwokPort}`,
      // INFO logs every pod and node patch: gigabytes at thousands of nodes.
      '--v=WARN',
      '--node-ip=127.0.0.1',
      '--cidr=10.244.0.1/16',
      // Heartbeats through Leases, as kubelets do: cheap enough for thousands of nodes.
      `--node-lease-duration-seconds=${leaseSeconds}`,
    ],
  };
}

/**
 * KWOK's configuration: explicit (so a ~/.kwok/kwok.yaml cannot change the simulation), with KWOK's own
 * fast node and pod stages and nuo's for Job pods (`stages`, printed by the kwok-stages tool) and Lease
 * heartbeats.
 */
export function kwokConfig(leaseSeconds: number, stages: string): string {
  return `${JSON.stringify({
    apiVersion: 'config.kwok.x-k8s.io/v1alpha1',
    kind: 'KwokConfiguration',
    // KWOK's defaults are 4 workers each; each node's Lease is created before its stages play, so
    // thousands of nodes become Ready only as fast as these workers create Leases.
    options: {
      nodeLeaseDurationSeconds: leaseSeconds,
      nodeLeaseParallelism: 64,
      nodePlayStageParallelism: 64,
      podPlayStageParallelism: 64,
      podsOnNodeSyncParallelism: 4,
    },
  })}\n---\n${stages}`;
}

export function schedulerConfig(kubeconfigPath: string): string {
  return JSON.stringify({
    apiVersion: 'kubescheduler.config.k8s.io/v1',
    kind: 'KubeSchedulerConfiguration',
    clientConnection: { kubeconfig: kubeconfigPath, qps: 1000, burst: 2000 },
    leaderElection: { leaderElect: false },
  });
}
