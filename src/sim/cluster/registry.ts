/**
 * A real OCI registry for the VM nodes, the release test and the benchmarks: Debian's `docker-registry`
 * (the CNCF distribution registry), its binary run with a config file of its own (not the package's
 * service), on a free loopback port without TLS, storing in a temporary directory removed when it stops.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pollUntil } from '../../util/poll.ts';
import { freePort, get } from './net.ts';
import { Component } from './process.ts';
import { reapAbandonedClusters } from './reaper.ts';

export const REGISTRY = '/usr/bin/docker-registry';
const DIR_PREFIX = 'nuo-registry-test-';

export interface RunningRegistry {
  /** host:port, as image references and `oci://` URLs name it. */
  host: string;
  stop(): Promise<void>;
}

/** The registry's configuration: filesystem storage under `dir`, HTTP on `addr`, warnings only. */
export function registryConfig(dir: string, addr: string): string {
  return `version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: ${join(dir, 'data')}
http:
  addr: ${addr}
`;
}

/** Starts the registry and waits for its API to answer; fails loudly when Debian's package is missing. */
export async function startRegistry(): Promise<RunningRegistry> {
  if (!existsSync(REGISTRY)) {
    throw new Error(
      `${REGISTRY} is missing: install Debian's package (apt-get install -y docker-registry; .ci/run does) to run the release test`,
    );
  }
  await reapAbandonedClusters(tmpdir(), DIR_PREFIX);
  const dir = await mkdtemp(join(tmpdir(), DIR_PREFIX));
  await writeFile(join(dir, 'owner'), `${process.pid}\n`);
  const host = `127.0.0.1:${await freePort()}`;
  await writeFile(join(dir, 'config.yml'), registryConfig(dir, host));
  const component = new Component({
    name: 'docker-registry',
    binary: REGISTRY,
    args: ['serve', join(dir, 'config.yml')],
    logFile: join(dir, 'registry.log'),
    pidFile: join(dir, 'pids'),
  });
  const exited = component.exited.then((code) => {
    throw new Error(`docker-registry exited (code ${code}) before it answered:\n${component.tail(30)}`);
  });
  const ready = pollUntil(
    'the registry to answer /v2/',
    async () =>
      (await get(`http://${host}/v2/`).catch(() => ({ status: 0 }))).status === 200 ? true : undefined,
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  await Promise.race([ready, exited]);
  return {
    host,
    stop: async () => {
      await component.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
