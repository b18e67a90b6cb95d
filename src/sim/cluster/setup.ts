/**
 * What a local control plane is started with: its directory (logs, the components' pid file), PKI, free
 * loopback ports, configuration files, each component's command line and health check.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ClusterBinaries } from '../../../tools/cluster/build.ts';
import { type AuditOptions, auditPolicy } from './audit.ts';
import {
  type ComponentName,
  componentArgs,
  kwokConfig,
  type Ports,
  schedulerConfig,
} from './component-args.ts';
import { adminKubeconfig } from './kubeconfig.ts';
import { freePort, get, type Tls } from './net.ts';
import { createPki, type Pki } from './pki.ts';

const run = promisify(execFile);

/** Every cluster's directory is named so: the reaper finds those a killed process left behind. */
export const CLUSTER_DIR_PREFIX = 'nuo-cluster-';

/** The options of ClusterOptions that shape what the components run with. */
export interface SetupOptions {
  /**
   * Duration of the KWOK nodes' Leases (default 40 s, the kubelet's); KWOK renews each a quarter of it
   * apart, and the node-lifecycle controller's grace period is set to 1.25 times it (at least 50 s, its
   * default). Heartbeats are the bulk of a large idle cluster's writes (5,000 nodes renewing every 10 s
   * is 500 Lease updates a second), so benchmarks of thousands of nodes lengthen it.
   */
  nodeLeaseDurationSeconds?: number;
  /**
   * kube-apiserver audit logging at Metadata level, as JSON lines in `auditLogPath` (read them with
   * readAuditLog from ./audit.ts): of the given users' requests, or of every request.
   */
  audit?: AuditOptions;
}

/** The cluster's directory: its logs, its components' pid file, removed with the process if left behind. */
export interface Workspace {
  dir: string;
  logs: string;
  pidFile: string;
  remove: () => void;
}

export async function makeWorkspace(): Promise<Workspace> {
  const dir = await mkdtemp(join(tmpdir(), CLUSTER_DIR_PREFIX));
  const logs = join(dir, 'logs');
  mkdirSync(logs);
  writeFileSync(join(dir, 'owner'), String(process.pid));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  process.on('exit', remove);
  return { dir, logs, pidFile: join(dir, 'pids'), remove };
}

/** What the components are started with: PKI, ports, configuration files, command lines, health checks. */
export interface Setup {
  pki: Pki;
  tlsAdmin: Tls;
  server: string;
  kubeconfigPath: string;
  auditLogPath?: string;
  args: Record<ComponentName, string[]>;
  health: Record<ComponentName, () => Promise<boolean>>;
}

export async function writeSetup(
  dir: string,
  binaries: ClusterBinaries,
  options: SetupOptions,
): Promise<Setup> {
  const leaseSeconds = options.nodeLeaseDurationSeconds ?? 40;
  if (!Number.isInteger(leaseSeconds) || leaseSeconds < 10)
    throw new Error(`nodeLeaseDurationSeconds must be an integer ≥ 10, got ${leaseSeconds}`);
  const pki = await createPki(dir);
  const tlsAdmin: Tls = {
    ca: await readFile(pki.caCert),
    cert: await readFile(pki.adminCert),
    key: await readFile(pki.adminKey),
  };
  const ports: Ports = {
    etcdPort: await freePort(),
    peerPort: await freePort(),
    apiPort: await freePort(),
    cmPort: await freePort(),
    schedPort: await freePort(),
    kwokPort: await freePort(),
  };
  const server = `https://127.0.0.1:${ports.apiPort}`;
  const kubeconfigPath = join(dir, 'admin.kubeconfig');
  await writeFile(kubeconfigPath, adminKubeconfig(server, pki, tlsAdmin));
  const stages = (await run(binaries.path['kwok-stages'], [])).stdout;
  await writeFile(join(dir, 'kwok.yaml'), kwokConfig(leaseSeconds, stages));
  const schedulerPath = join(dir, 'scheduler.json');
  await writeFile(schedulerPath, schedulerConfig(kubeconfigPath));
  const args = componentArgs({
    dir,
    pki,
    kubeconfigPath,
    schedulerConfig: schedulerPath,
    ports,
    leaseSeconds,
  });
  // Outside logs/, which logTails() prints whole-line for a failing test.
  const auditLogPath = options.audit ? join(dir, 'audit.log') : undefined;
  if (options.audit && auditLogPath) {
    const policyPath = join(dir, 'audit-policy.json');
    await writeFile(policyPath, JSON.stringify(auditPolicy(options.audit)));
    args['kube-apiserver'].push(
      `--audit-policy-file=${policyPath}`,
      `--audit-log-path=${auditLogPath}`,
      '--audit-log-format=json',
      // Buffered writes: a blocking write per request would slow every audited request down.
      '--audit-log-mode=batch',
      '--audit-log-batch-max-wait=1s',
    );
  }
  const { etcdPort, cmPort, schedPort, kwokPort } = ports;
  const health: Setup['health'] = {
    etcd: async () => (await get(`http://127.0.0.1:${etcdPort}/health`)).body.includes('"true"'),
    'kube-apiserver': async () => (await get(`${server}/readyz`, tlsAdmin)).status === 200,
    'kube-controller-manager': async () =>
      (await get(`https://127.0.0.1:${cmPort}/healthz`, { insecure: true })).status === 200,
    'kube-scheduler': async () =>
      (await get(`https://127.0.0.1:${schedPort}/healthz`, { insecure: true })).status === 200,
    kwok: async () => (await get(`http://127.0.0.1:${kwokPort}/healthz`)).status === 200,
  };
  return { pki, tlsAdmin, server, kubeconfigPath, args, health, ...(auditLogPath ? { auditLogPath } : {}) };
}
