/**
 * The `kubernetes` Service's endpoint as VM nodes reach it. The local API server listens on loopback only
 * and publishes no endpoint of its own (its reconciler refuses a loopback address), so pods using the
 * in-cluster configuration (KUBERNETES_SERVICE_HOST, the Service's ClusterIP) would reach nothing. The
 * harness publishes the address every VM reaches the host's loopback at; kube-proxy in each VM routes the
 * ClusterIP there. KWOK nodes run no pods, so they never use it.
 */
import { DiscoveryV1Api, type KubeConfig, type V1EndpointSlice } from '@kubernetes/client-node';
import { statusCode } from '../../kube/errors.ts';
import { HOST_FROM_GUEST } from './qemu.ts';

export const API_SLICE_NAME = 'kubernetes-vm-nodes';

export function apiEndpointSlice(apiPort: number): V1EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: API_SLICE_NAME,
      namespace: 'default',
      labels: {
        'kubernetes.io/service-name': 'kubernetes',
        // Not the endpointslice controller's: it leaves the slice alone.
        'endpointslice.kubernetes.io/managed-by': 'vm-nodes.sim.nuo.dev',
      },
    },
    addressType: 'IPv4',
    endpoints: [{ addresses: [HOST_FROM_GUEST], conditions: { ready: true } }],
    ports: [{ name: 'https', port: apiPort, protocol: 'TCP' }],
  };
}

export async function publishApiEndpoint(kubeconfig: KubeConfig, apiPort: number): Promise<void> {
  const api = kubeconfig.makeApiClient(DiscoveryV1Api);
  const body = apiEndpointSlice(apiPort);
  try {
    await api.createNamespacedEndpointSlice({ namespace: 'default', body });
  } catch (err) {
    if (statusCode(err) !== 409) throw err;
    await api.replaceNamespacedEndpointSlice({ name: API_SLICE_NAME, namespace: 'default', body });
  }
}
