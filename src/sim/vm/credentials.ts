/**
 * Credentials the harness mints for VM nodes with the cluster's CA: each kubelet's client certificate
 * (system:node:<name> in group system:nodes, so the Node authorizer and NodeRestriction confine it to its
 * own Node), kube-proxy's (system:kube-proxy, bound to system:node-proxier by default RBAC), and the SSH
 * key the harness runs commands in the VMs with.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { signedCert } from '../cluster/pki.ts';

const exec = promisify(execFile);

const CLIENT_EXT = [
  'basicConstraints=CA:FALSE',
  'keyUsage=critical,digitalSignature,keyEncipherment',
  'extendedKeyUsage=clientAuth',
  '',
].join('\n');

export interface CertPair {
  cert: string;
  key: string;
}

async function clientCert(pkiDir: string, name: string, subject: string): Promise<CertPair> {
  await signedCert(pkiDir, name, subject, CLIENT_EXT);
  return {
    cert: await readFile(join(pkiDir, `${name}.crt`), 'utf8'),
    key: await readFile(join(pkiDir, `${name}.key`), 'utf8'),
  };
}

/** `pkiDir` holds the cluster's ca.crt and ca.key (the cluster's directory). */
export function kubeletCert(pkiDir: string, nodeName: string): Promise<CertPair> {
  return clientCert(pkiDir, `kubelet-${nodeName}`, `/O=system:nodes/CN=system:node:${nodeName}`);
}

export function kubeProxyCert(pkiDir: string): Promise<CertPair> {
  return clientCert(pkiDir, 'kube-proxy', '/CN=system:kube-proxy');
}

/** An ed25519 key pair at `path` and `path`.pub; returns the public key. */
export async function sshKey(path: string): Promise<string> {
  try {
    await exec('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'nuo-harness', '-f', path]);
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new Error('ssh-keygen not found: install openssh-client (.ci/run does)');
    throw new Error(`ssh-keygen -f ${path} failed: ${e.stderr?.trim() || e.message}`);
  }
  return readFile(`${path}.pub`, 'utf8');
}
