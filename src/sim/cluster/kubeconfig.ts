import type { Tls } from './net.ts';
import type { Pki } from './pki.ts';

const b64 = (data: Buffer | undefined) => (data ?? Buffer.alloc(0)).toString('base64');

/** A self-contained kubeconfig (JSON is YAML) with the admin's client certificate embedded. */
export function adminKubeconfig(server: string, _pki: Pki, tls: Tls): string {
  return kubeconfig(server, tls.ca, 'nuo-admin', {
    'client-certificate-data': b64(tls.cert),
    'client-key-data': b64(tls.key),
  });
}

export function tokenKubeconfig(server: string, ca: Buffer, user: string, token: string): string {
  return kubeconfig(server, ca, user, { token });
}

function kubeconfig(server: string, ca: Buffer | undefined, user: string, credentials: object): string {
  return `${JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'nuo-local', cluster: { server, 'certificate-authority-data': b64(ca) } }],
      users: [{ name: user, user: credentials }],
      contexts: [{ name: `${user}@nuo-local`, context: { cluster: 'nuo-local', user } }],
      'current-context': `${user}@nuo-local`,
    },
    null,
    2,
  )}\n`;
}
